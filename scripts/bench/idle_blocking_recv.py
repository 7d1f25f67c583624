"""Control for the idle-CPU measurement: ranks waiting in a blocking MPI receive, as a
hand-written mpi4py master/worker does. Rank 0 sleeps SECONDS, then releases the others."""
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
if comm.Get_rank() == 0:
    time.sleep(float(sys.argv[1]))
    for r in range(1, comm.Get_size()):
        comm.send(None, dest=r)
else:
    comm.recv(source=0)
