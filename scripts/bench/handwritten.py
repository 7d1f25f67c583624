"""Peer for the dispatch benchmark: a hand-written mpi4py master/worker.

Rank 0 hands 64-byte tasks out on demand with send/recv, two tasks in flight per worker;
workers echo each task back (no compute). Blocking MPI calls, as most hand-written codes do.
Run as: mpirun -np 5 python handwritten.py TASKS
"""
import sys
import time

from mpi4py import MPI

TASK, STOP = 1, 2


def master(comm, tasks):
    workers = comm.Get_size() - 1
    payload = bytes(64)
    status = MPI.Status()
    comm.Barrier()
    start = time.perf_counter()
    sent = done = 0
    for w in range(1, workers + 1):
        for _ in range(2):  # two tasks in flight per worker
            if sent < tasks:
                comm.send(payload, dest=w, tag=TASK)
                sent += 1
    while done < tasks:
        comm.recv(source=MPI.ANY_SOURCE, tag=TASK, status=status)
        done += 1
        if sent < tasks:
            comm.send(payload, dest=status.Get_source(), tag=TASK)
            sent += 1
    wall = time.perf_counter() - start
    for w in range(1, workers + 1):
        comm.send(None, dest=w, tag=STOP)
    print(f"handwritten tasks={done} wall_s={wall:.6f} tasks_per_s={done / wall:.1f}")


def worker(comm):
    status = MPI.Status()
    comm.Barrier()
    while True:
        task = comm.recv(source=0, tag=MPI.ANY_TAG, status=status)
        if status.Get_tag() == STOP:
            return
        comm.send(task, dest=0, tag=TASK)


def main():
    comm = MPI.COMM_WORLD
    tasks = int(sys.argv[1])
    if comm.Get_rank() == 0:
        master(comm, tasks)
    else:
        worker(comm)


if __name__ == "__main__":
    main()
