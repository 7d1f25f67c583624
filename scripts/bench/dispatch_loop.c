/* Peer for the dispatch benchmark: a hand-written C MPI master/worker.
 *
 * Rank 0 hands 64-byte tasks out on demand, two tasks in flight per worker, one task per
 * message; workers echo each task back (no compute). Two ways to wait, chosen by argv[1]:
 *   spin    blocking MPI_Send/MPI_Recv: OpenMPI's progress loop spins while it waits, so an
 *           idle rank uses a whole core;
 *   polite  MPI_Iprobe, then the same backoff as hmw's waiting loops (framework/src/idle.rs):
 *           polls for 100 us, then sleeps doubling from 20 us to 2 ms, reset by any message;
 *           OpenMPI's yield at each poll turned off as hmw's ranks turn it off. It probes
 *           once more right before each sleep: Open MPI's probe looks for a match before it
 *           progresses, so the probe that pulls a message in says there is none. Without that
 *           probe a message that arrived during a sleep was seen only after the next, twice
 *           as long: with one worker both ranks fell into a convoy of sleeps (1,000-17,000
 *           tasks/s over 200,000 tasks, against 1.4-2.6 M with it; docs/benchmarks.md).
 * Usage: mpirun -np N dispatch_loop spin|polite TASKS
 *        mpirun -np N dispatch_loop idle SECONDS   (every rank waits politely SECONDS for nothing)
 * Prints on rank 0: c_MODE tasks=T wall_s=W tasks_per_s=R master_cpu_us_per_task=C
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TASK = 1, STOP = 2, SIZE = 64 };
static const double QUICK_POLLING_S = 100e-6;
static const long FIRST_SLEEP_NS = 20000, MAX_SLEEP_NS = 2000000;

static int polite;

/* Whether a message from `source` (or any) is there; then `status` says which. */
static int probe(int source, MPI_Status *status) {
    int flag = 0;
    MPI_Iprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, status);
    return flag;
}

/* Waits politely until a message from `source` (or any) is there, or until MPI_Wtime() passes
 * `deadline` when it is positive; returns whether a message came and then fills `status`. */
static int wait_message(int source, MPI_Status *status, double deadline) {
    long sleep_ns = 0;
    double quick_since = -1;
    for (;;) {
        if (probe(source, status))
            return 1;
        double now = MPI_Wtime();
        if (deadline > 0 && now > deadline)
            return 0;
        if (quick_since < 0)
            quick_since = now;
        if (now - quick_since < QUICK_POLLING_S)
            continue;
        if (probe(source, status))
            return 1;
        sleep_ns = sleep_ns == 0 ? FIRST_SLEEP_NS : sleep_ns * 2;
        if (sleep_ns > MAX_SLEEP_NS)
            sleep_ns = MAX_SLEEP_NS;
        struct timespec pause = {0, sleep_ns};
        nanosleep(&pause, NULL);
    }
}

/* Receives a message from `source` (or any) into `buf`, waiting as the chosen mode does. */
static void receive(void *buf, int count, int source, MPI_Status *status) {
    if (polite) {
        wait_message(source, status, 0);
        source = status->MPI_SOURCE;
    }
    MPI_Recv(buf, count, MPI_BYTE, source, MPI_ANY_TAG, MPI_COMM_WORLD, status);
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void master(long tasks, int workers, const char *mode) {
    char buf[SIZE];
    memset(buf, 7, SIZE);
    MPI_Status status;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime(), cpu_start = cpu_seconds();
    long sent = 0, done = 0;
    for (int w = 1; w <= workers; w++)
        for (int k = 0; k < 2 && sent < tasks; k++, sent++)
            MPI_Send(buf, SIZE, MPI_BYTE, w, TASK, MPI_COMM_WORLD);
    while (done < tasks) {
        receive(buf, SIZE, MPI_ANY_SOURCE, &status);
        done++;
        if (sent < tasks) {
            MPI_Send(buf, SIZE, MPI_BYTE, status.MPI_SOURCE, TASK, MPI_COMM_WORLD);
            sent++;
        }
    }
    double wall = MPI_Wtime() - start, cpu = cpu_seconds() - cpu_start;
    for (int w = 1; w <= workers; w++)
        MPI_Send(buf, 0, MPI_BYTE, w, STOP, MPI_COMM_WORLD);
    printf("c_%s tasks=%ld wall_s=%.6f tasks_per_s=%.1f master_cpu_us_per_task=%.3f\n", mode, done,
           wall, done / wall, 1e6 * cpu / done);
}

static void worker(void) {
    char buf[SIZE];
    MPI_Status status;
    MPI_Barrier(MPI_COMM_WORLD);
    for (;;) {
        receive(buf, SIZE, 0, &status);
        if (status.MPI_TAG == STOP)
            return;
        MPI_Send(buf, SIZE, MPI_BYTE, 0, TASK, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv) {
    /* Read by OpenMPI in MPI_Init; the environment wins, as for hmw's ranks. */
    if (argc == 3 && strcmp(argv[1], "spin") != 0)
        setenv("OMPI_MCA_mpi_yield_when_idle", "0", 0);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || (strcmp(argv[1], "spin") && strcmp(argv[1], "polite") && strcmp(argv[1], "idle"))) {
        if (rank == 0)
            fprintf(stderr, "usage: dispatch_loop spin|polite TASKS | idle SECONDS\n");
        MPI_Finalize();
        return 2;
    }
    polite = strcmp(argv[1], "spin") != 0;
    long n = atol(argv[2]);
    if (strcmp(argv[1], "idle") == 0) {
        MPI_Status status;
        wait_message(MPI_ANY_SOURCE, &status, MPI_Wtime() + n);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (rank == 0) {
        master(n, size - 1, argv[1]);
    } else {
        worker();
    }
    MPI_Finalize();
    return 0;
}
