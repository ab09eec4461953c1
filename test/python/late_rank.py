#!/usr/bin/python3
# The last rank joins an allreduce late: the others wait for it meanwhile.
import sys, time
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
delay = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
a = np.full(1024, comm.rank + 1, dtype=np.int64)
b = np.zeros_like(a)
comm.Allreduce(a, b)                 # everyone on time
if comm.rank == comm.size - 1:
    time.sleep(delay)
comm.Allreduce(a, b)
ok = b[0] == comm.size * (comm.size + 1) // 2
print("late_rank: rank %d %s" % (comm.rank, "ok" if ok else "WRONG"), flush=True)
