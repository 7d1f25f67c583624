/* The time a cache line takes to go from one core to another and back: two threads, one on
 * each of the first two cores this process may use, hand a counter to each other 20,000
 * times. On this project's VM it is 100 ns in some stretches and 400-500 ns in others,
 * changing every few seconds as the host places the virtual CPUs (docs/benchmarks.md): every
 * message between two ranks on different cores pays it, so the dispatch benchmark prints it
 * beside each round.
 * Usage: core_latency   Prints: core_round_trip_ns=N (? when it cannot keep a thread on each
 *                      of two cores)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

enum { ROUND_TRIPS = 20000 };
static _Atomic long turn __attribute__((aligned(64)));

/* The set of `cpu` alone. */
static cpu_set_t only(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return set;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* On the second core: answers each odd turn with the next even one. */
static void *answer(void *unused) {
    (void)unused;
    for (long t = 1; t < 2 * ROUND_TRIPS; t += 2) {
        while (atomic_load(&turn) != t)
            ;
        atomic_store(&turn, t + 1);
    }
    return NULL;
}

/* What it prints when it cannot keep one thread on each of two cores. */
static int unmeasured(void) {
    printf("core_round_trip_ns=? (cannot keep a thread on each of two cores)\n");
    return 0;
}

int main(void) {
    /* The first two cores this process may run on. */
    cpu_set_t allowed;
    int cores[2], found = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++)
            if (CPU_ISSET(cpu, &allowed))
                cores[found++] = cpu;
    if (found < 2)
        return unmeasured();
    /* Two threads spinning on one core would hand the counter over once per time slice: this
     * thread stays on the first core, the answering one starts on the second or not at all. */
    cpu_set_t first = only(cores[0]), second = only(cores[1]);
    pthread_attr_t attr;
    pthread_t other;
    if (pthread_setaffinity_np(pthread_self(), sizeof first, &first) != 0 ||
        pthread_attr_init(&attr) != 0 ||
        pthread_attr_setaffinity_np(&attr, sizeof second, &second) != 0 ||
        pthread_create(&other, &attr, answer, NULL) != 0)
        return unmeasured();
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
