/* The time a cache line takes to go from one core to another and back: two threads, one on
 * each of the first two cores this process may use, hand a counter to each other 20,000
 * times. On this project's VM it is 100 ns in some stretches and 400-500 ns in others,
 * changing every few seconds as the host places the virtual CPUs (docs/benchmarks.md): every
 * message between two ranks on different cores pays it, so the dispatch benchmark prints it
 * beside each round.
 * Usage: core_latency   Prints: core_round_trip_ns=N (? with fewer than two cores to use)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

enum { ROUND_TRIPS = 20000 };
static _Atomic long turn __attribute__((aligned(64)));
/* The two cores: the first two this process may run on. */
static int cores[2];

/* Keeps the calling thread on `cpu`; whether it could. */
static int pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The second core: answers each odd turn with the next even one. */
static void *answer(void *unused) {
    (void)unused;
    pin(cores[1]);
    for (long t = 1; t < 2 * ROUND_TRIPS; t += 2) {
        while (atomic_load(&turn) != t)
            ;
        atomic_store(&turn, t + 1);
    }
    return NULL;
}

int main(void) {
    cpu_set_t allowed;
    int found = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++)
            if (CPU_ISSET(cpu, &allowed))
                cores[found++] = cpu;
    /* Two threads spinning on one core would hand the counter over once per time slice. */
    if (found < 2 || !pin(cores[0])) {
        printf("core_round_trip_ns=? (fewer than two cores to use)\n");
        return 0;
    }
    pthread_t other;
    pthread_create(&other, NULL, answer, NULL);
    double start = now();
    for (long t = 0; t < 2 * ROUND_TRIPS; t += 2) {
        atomic_store(&turn, t + 1);
        while (atomic_load(&turn) != t + 2)
            ;
    }
    double elapsed = now() - start;
    pthread_join(other, NULL);
    printf("core_round_trip_ns=%.0f\n", elapsed / ROUND_TRIPS * 1e9);
    return 0;
}
