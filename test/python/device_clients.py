#!/usr/bin/python3
"""device_clients.py - mpi4py calls on GPU arrays (CuPy, PyTorch CUDA
tensors), as deep-learning codes make them, checked element by element.

    mpirun -np N python3 test/python/device_clients.py [--lib cupy|torch|both]
                                                       [--rounds K]

Per library and round: Allreduce (SUM, float32, in place and not),
Iallreduce (the call open-mpi/ompi#9845 reports crashing on such buffers),
Allgather and Reduce_scatter_block, on COMM_WORLD and on an even/odd split,
the nonblocking calls started on both communicators before either is
waited for. Inputs are small integers, so every sum is exact in any order.
A library that is not installed is skipped (said once). Prints
"device_clients: N passed, M failed"; the exit status is 1 when a check
failed.
"""
import argparse
import sys

import numpy as np
from mpi4py import MPI


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lib", choices=("cupy", "torch", "both"), default="both")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--count", type=int, default=65537)
    return p.parse_args()


class Lib:
    """The few array operations the checks need, over CuPy or PyTorch."""

    def __init__(self, name):
        self.name = name
        if name == "cupy":
            import cupy
            self.m = cupy
        else:
            import torch
            if not torch.cuda.is_available():
                raise ImportError("torch has no CUDA device")
            self.m = torch
            torch.cuda.set_device(0)

    def full(self, n, value):
        if self.name == "cupy":
            return self.m.full(n, value, dtype=self.m.float32)
        return self.m.full((n,), float(value), dtype=self.m.float32, device="cuda")

    def empty(self, n):
        return self.full(n, -1.0)

    def host(self, a):
        if self.name == "cupy":
            return self.m.asnumpy(a)
        return a.cpu().numpy()

    def sync(self):
        if self.name == "cupy":
            self.m.cuda.runtime.deviceSynchronize()
        else:
            self.m.cuda.synchronize()


def checks(lib, comms, count, rnd):
    """Yields (name, ok) for one round on every communicator."""
    pending = []
    for ci, comm in enumerate(comms):
        r, n = comm.rank, comm.size
        base = 1 + rnd + ci
        want_sum = sum(base + q for q in range(n))
        a = lib.full(count, base + r)
        b = lib.empty(count)
        lib.sync()   # the arrays are written before MPI reads them
        comm.Allreduce(a, b, op=MPI.SUM)
        yield "allreduce c%d" % ci, bool((lib.host(b) == want_sum).all())
        comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)
        yield "allreduce in place c%d" % ci, bool((lib.host(a) == want_sum).all())
        g = lib.empty(count * n)
        c = lib.full(count, base + r)
        lib.sync()
        comm.Allgather(c, g)
        want = np.repeat(np.arange(n, dtype=np.float32) + base, count)
        yield "allgather c%d" % ci, bool((lib.host(g) == want).all())
        blk = max(1, count // n)
        s = lib.full(blk * n, base + r)
        o = lib.empty(blk)
        lib.sync()
        comm.Reduce_scatter_block(s, o, op=MPI.SUM)
        yield "reduce_scatter_block c%d" % ci, bool((lib.host(o) == want_sum).all())
        ia = lib.full(count, base + r)
        ib = lib.empty(count)
        lib.sync()
        pending.append(("iallreduce c%d" % ci, comm.Iallreduce(ia, ib, op=MPI.SUM), ib, want_sum,
                        ia))
    MPI.Request.Waitall([p[1] for p in pending])
    for name, _, out, want_sum, _ in pending:
        yield name, bool((lib.host(out) == want_sum).all())


def main():
    args = parse()
    world = MPI.COMM_WORLD
    split = world.Split(world.rank % 2, world.rank)
    passed = failed = 0
    libs = ("cupy", "torch") if args.lib == "both" else (args.lib,)
    for name in libs:
        try:
            lib = Lib(name)
        except ImportError as e:
            if world.rank == 0:
                print("device_clients: %s skipped (%s)" % (name, e), flush=True)
            continue
        for rnd in range(args.rounds):
            for what, ok in checks(lib, (world, split), args.count, rnd):
                if ok:
                    passed += 1
                else:
                    failed += 1
                    print("FAIL device_clients: rank %d %s round %d %s" % (world.rank, name, rnd,
                                                                          what), flush=True)
    split.Free()
    total = world.allreduce(np.array([passed, failed], dtype=np.int64), op=MPI.SUM)
    if world.rank == 0:
        print("device_clients: %d passed, %d failed" % (total[0], total[1]), flush=True)
    return 1 if total[1] else 0


if __name__ == "__main__":
    sys.exit(main())
