/* The time a cache line takes to go from core 0 to core 1 and back: two threads, one on each
 * core, hand a counter to each other 20,000 times. On this project's VM it is 100 ns in some
 * stretches and 400-500 ns in others, changing every few seconds as the host places the
 * virtual CPUs (docs/benchmarks.md): every message between two ranks on different cores pays
 * it, so the dispatch benchmark prints it beside each round.
 * Usage: core_latency   Prints: core_round_trip_ns=N (? on a machine of one core)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

enum { ROUND_TRIPS = 20000 };
static _Atomic long turn __attribute__((aligned(64)));

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Core 1: answers each odd turn with the next even one. */
static void *answer(void *unused) {
    (void)unused;
    pin(1);
    for (long t = 1; t < 2 * ROUND_TRIPS; t += 2) {
        while (atomic_load(&turn) != t)
            ;
        atomic_store(&turn, t + 1);
    }
    return NULL;
}

int main(void) {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        printf("core_round_trip_ns=? (one core)\n");
        return 0;
    }
    pin(0);
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
