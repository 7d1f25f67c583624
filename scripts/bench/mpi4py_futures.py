"""Peer for the dispatch benchmark: mpi4py.futures with the same tiny workload as hmw-dispatch.

Run as: mpirun -np 5 python -m mpi4py.futures mpi4py_futures.py TASKS
Rank 0 maps 64-byte tasks (echoed back, no compute) over the pool with chunksize 1.
"""
import sys
import time

from mpi4py.futures import MPIPoolExecutor


def echo(payload):
    return payload


def main():
    tasks = int(sys.argv[1])
    payload = bytes(64)
    with MPIPoolExecutor() as pool:
        # Warm the pool up so worker start-up is not timed (hmw times dispatch only, too).
        list(pool.map(echo, [payload] * 8, chunksize=1))
        start = time.perf_counter()
        done = sum(1 for _ in pool.map(echo, [payload] * tasks, chunksize=1))
        wall = time.perf_counter() - start
    assert done == tasks
    print(f"mpi4py_futures tasks={done} wall_s={wall:.6f} tasks_per_s={done / wall:.1f}")


if __name__ == "__main__":
    main()
