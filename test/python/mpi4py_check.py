#!/usr/bin/python3
"""mpi4py_check.py - MPI semantics through coll/dfccl, checked with mpi4py + NumPy.

Run under mpirun with Debian's /usr/bin/python3 (python3-mpi4py,
python3-numpy); test/python/mpi4py_check.sh is the `make check` wrapper.

Every case builds each member's input from a deterministic hash of (case
number, member rank), so every rank knows all inputs and computes the
expected result with NumPy; inputs are integer-valued and ranged so that
every result is exact in any order of reduction. Checked per call:

  result   the receive buffer's result (bit-exact for allgather)
  guard    elements after the receive span keep their poison
  sendbuf  a separate send buffer is unchanged
  tail     in-place reduce-scatter(-block): the elements past the rank's own
           result block still hold what the caller wrote

Phases (the same calls, in the same order, on every rank):

  matrix     every (dtype, op) dfccl carries x allreduce, reduce_scatter
             (unequal counts with zeros), reduce_scatter_block, and every
             dtype x allgather, on COMM_WORLD, a dup, an even/odd split and
             a reversed-order split; blocking/nonblocking and in place or
             not rotate over the four communicators, so each (collective,
             dtype, op) sees all four; small counts; the MPI type is the one
             mpi4py infers from the array or an explicit fixed-width alias
  counts     counts 0, 1 and 7 (and a one-rank-only reduce_scatter) for the
             four collectives x blocking x in place x communicators
  large      one count over 1 MiB per collective x blocking x in place
  overlap    nonblocking calls on all four communicators outstanding at once
  fallback   what dfccl hands to Open MPI's own code and must still be
             right: a user-defined op (allreduce, in-place
             reduce_scatter_block), MAXLOC/MINLOC on MPI.DOUBLE_INT,
             complex128 SUM; and derived types in allgather: contiguous
             (both sides, in place, against INT), which dfccl carries as
             bytes, and a strided vector on the send side, the receive side
             and in place (the receive buffer's gaps must stay untouched)

Each failed check prints one line "FAIL mpi4py_check: rank R comm=...
coll=... dtype=<numpy>/<MPI type> op=... inplace=0|1 nonblocking=0|1
count=... check=...: first wrong index I: expected X, got Y". The last
line on rank 0 is "mpi4py_check: N passed, M failed" (sums over all ranks,
gathered with an allreduce on COMM_WORLD); the exit status is non-zero
when M > 0.

Route: "engine" when coll/dfccl carries host buffers (from --route
engine|stock, else from the OMPI_MCA_* variables mpirun sets for --mca
coll_dfccl_host_buffers engine, coll, coll_dfccl_enable), else "stock".
On the stock route two known differences of Open MPI 4.1's own collectives
are printed as WAIVED lines and counted apart, not as failures: MIN/MAX on
MPI_UNSIGNED_LONG compared as signed, and an in-place reduce_scatter that
overwrites the rest of comm rank 0's buffer (recvcounts [0, ..., 0, c],
np >= 4). On the engine route they are failures like any other.
"""
import os
import sys
import time
import traceback

import numpy as np
from mpi4py import MPI

from mpi4py_values import (DT, GATHER_TYPES, PAIRS, first_diff, hash_bits, make_input,
                           mpi_name, mpi_type_of, poisoned, reduce_ref, uniform_int)

PROG = "mpi4py_check"
WORLD = MPI.COMM_WORLD
WRANK = WORLD.Get_rank()
WSIZE = WORLD.Get_size()
GUARD = 8          # poisoned elements after each receive span
MIB = 1 << 20


def _abort_on_exception(etype, value, tb):
    """A bug in this script must not leave the other ranks waiting."""
    sys.stdout.flush()
    sys.stderr.write("%s: rank %d: unexpected exception:\n" % (PROG, WRANK))
    traceback.print_exception(etype, value, tb)
    sys.stderr.flush()
    WORLD.Abort(3)


sys.excepthook = _abort_on_exception


def detect_route(argv):
    """'engine' when coll/dfccl carries host buffers, else 'stock': from
    --route engine|stock, or else from the OMPI_MCA_* variables mpirun sets
    for its --mca options (coll_dfccl_host_buffers engine, coll not
    excluding dfccl, coll_dfccl_enable not off)."""
    for i, a in enumerate(argv):
        if a == "--route" and i + 1 < len(argv) and argv[i + 1] in ("engine", "stock"):
            return argv[i + 1]
        if a in ("--route=engine", "--route=stock"):
            return a.split("=", 1)[1]
    env = os.environ
    coll = env.get("OMPI_MCA_coll", "")
    names = [w.strip() for w in coll.lstrip("^").split(",") if w.strip()]
    if coll.startswith("^") and "dfccl" in names:
        return "stock"
    if coll and not coll.startswith("^") and "dfccl" not in names:
        return "stock"
    if env.get("OMPI_MCA_coll_dfccl_enable", "1").lower() in ("0", "false", "no", "f", "n"):
        return "stock"
    return "engine" if env.get("OMPI_MCA_coll_dfccl_host_buffers", "") == "engine" else "stock"


ROUTE = detect_route(sys.argv[1:])
# Where Open MPI's own collectives (4.1.4 here) are known to differ from
# what this test checks, a mismatch on the stock route is reported as
# WAIVED, not counted as a failure; on the engine route it is a failure.
WAIVE_ULONG = ("stock route: Open MPI 4.1 compares MPI_UNSIGNED_LONG as signed in MIN/MAX"
               if ROUTE == "stock" else None)
WAIVE_RS_TAIL = ("stock route: Open MPI 4.1's in-place reduce_scatter may overwrite the rest of "
                 "the buffer (seen on comm rank 0 with recvcounts [0, ..., 0, c], np >= 4)"
                 if ROUTE == "stock" else None)


def say(line):
    """One whole line in one write, so that mpirun's forwarding does not
    splice another rank's output into it."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()



# ------------------------------------------------------------------- results

class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.waived = 0

    def check(self, desc, what, got, exp, bitwise=False, offset=0, waiver=None):
        """One check: got must equal exp; on a mismatch print one line. A
        mismatch that `waiver` (a reason) covers is counted apart."""
        if len(got) != len(exp):
            self.fail(desc, what, "length %d, expected %d" % (len(got), len(exp)), waiver)
            return
        i = first_diff(got, exp, bitwise)
        if i < 0:
            self.passed += 1
        else:
            self.fail(desc, what, "first wrong index %d: expected %r, got %r"
                      % (i + offset, exp[i].item(), got[i].item()), waiver)

    def fail(self, desc, what, detail, waiver=None):
        if waiver:
            self.waived += 1
            say("WAIVED %s: rank %d %s check=%s: %s [%s]" % (PROG, WRANK, desc, what, detail,
                                                           waiver))
            return
        self.failed += 1
        say("FAIL %s: rank %d %s check=%s: %s" % (PROG, WRANK, desc, what, detail))


TALLY = Tally()


# -------------------------------------------------------------- communicators

class Comm:
    def __init__(self, label, comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.label = "%s(rank %d of %d)" % (label, self.rank, self.size)


def make_comms():
    comms = [Comm("world", WORLD)]
    comms.append(Comm("dup", WORLD.Dup()))
    comms.append(Comm("split_parity%d" % (WRANK % 2), WORLD.Split(WRANK % 2, WRANK)))
    comms.append(Comm("split_reversed", WORLD.Split(0, WSIZE - 1 - WRANK)))
    return comms


# ---------------------------------------------------------------------- cases

COLLS = ["allreduce", "allgather", "reduce_scatter", "reduce_scatter_block"]

_SEQ = [0]


def next_seq():
    _SEQ[0] += 1
    return _SEQ[0]


def rs_counts(c, size, shape):
    """reduce_scatter's recvcounts: 'mixed' = unequal with zeros
    (c, 0, c+2, c+3, 0, ...), 'onehot' = only the last rank receives c."""
    if shape == "onehot":
        return [c if i == size - 1 else 0 for i in range(size)]
    if c == 0:
        return [0] * size
    return [0 if i % 3 == 1 else c + i for i in range(size)]


def spec(buf, mpitype):
    return buf if mpitype is None else [buf, mpitype]


class Case:
    """One collective call with its own buffers; start() issues it (returns
    the request of a nonblocking call), finish() checks it."""

    def __init__(self, cx, coll, t, choice, op, count, inplace, nonblocking,
                 shape="mixed"):
        self.cx, self.coll, self.t, self.choice = cx, coll, t, choice
        self.op, self.count, self.inplace, self.nonblocking = op, count, inplace, nonblocking
        self.seq = next_seq()
        size, rank = cx.size, cx.rank
        dt = t.np
        self.counts = None
        if coll in ("allgather", "allreduce"):
            n_in = count
        else:
            self.counts = (rs_counts(count, size, shape) if coll == "reduce_scatter"
                           else [count] * size)
            n_in = sum(self.counts)
        seed = self.seq * 1000003
        mine = make_input(t, op, n_in, size, seed + rank)
        if coll == "allgather":
            self.expected = np.concatenate([mine if j == rank else
                                            make_input(t, op, n_in, size, seed + j)
                                            for j in range(size)])
            n_out = count * size
        elif coll == "allreduce":
            self.expected = reduce_ref(np.stack([mine if j == rank else
                                                 make_input(t, op, n_in, size, seed + j)
                                                 for j in range(size)]), t, op)
            n_out = count
        else:   # only this rank's block of every member's input is needed
            off, n_out = sum(self.counts[:rank]), self.counts[rank]
            self.expected = reduce_ref(np.stack([mine[off:off + n_out] if j == rank else
                                                 make_input(t, op, n_out, size, seed + j, off)
                                                 for j in range(size)]), t, op)
        self.mine = mine
        # receive buffers: the span MPI is given, then GUARD poisoned elements
        if inplace:
            span = n_out if coll != "reduce_scatter" and coll != "reduce_scatter_block" else n_in
            self.rbuf_all = poisoned(span + GUARD, dt)
            if coll == "allgather":
                self.rbuf_all[rank * count:(rank + 1) * count] = mine
            else:
                self.rbuf_all[:n_in] = mine
            self.sbuf = None
        else:
            span = n_out
            self.rbuf_all = poisoned(span + GUARD, dt)
            self.sbuf = mine.copy()
        self.span = span
        self.rbuf = self.rbuf_all[:span]
        self.mpitype = choice
        self.op_obj = getattr(MPI, op) if op else None

    def describe(self):
        extra = ""
        if self.coll == "reduce_scatter":
            extra = " recvcounts=%s" % (self.counts,)
        return ("comm=%s coll=%s dtype=%s op=%s inplace=%d nonblocking=%d count=%d%s" %
                (self.cx.label, self.coll, mpi_name(self.t, self.choice), self.op or "-",
                 self.inplace, self.nonblocking, self.count, extra))

    def start(self):
        c = self.cx.comm
        nb = self.nonblocking
        s = MPI.IN_PLACE if self.inplace else spec(self.sbuf, self.mpitype)
        r = spec(self.rbuf, self.mpitype)
        if self.coll == "allreduce":
            return (c.Iallreduce if nb else c.Allreduce)(s, r, self.op_obj)
        if self.coll == "allgather":
            return (c.Iallgather if nb else c.Allgather)(s, r)
        if self.coll == "reduce_scatter":
            return (c.Ireduce_scatter if nb else c.Reduce_scatter)(s, r, self.counts, self.op_obj)
        return (c.Ireduce_scatter_block if nb else c.Reduce_scatter_block)(s, r, self.op_obj)

    def finish(self):
        desc = self.describe()
        bitwise = self.coll == "allgather"
        n_res = len(self.expected)
        waive = None
        if (self.op in ("MIN", "MAX") and
                mpi_type_of(self.t, self.choice) == MPI.UNSIGNED_LONG):
            waive = WAIVE_ULONG
        TALLY.check(desc, "result", self.rbuf[:n_res], self.expected, bitwise, waiver=waive)
        TALLY.check(desc, "guard", self.rbuf_all[self.span:], poisoned(GUARD, self.t.np), True,
                    offset=self.span)
        if self.sbuf is not None:
            TALLY.check(desc, "sendbuf", self.sbuf, self.mine, True)
        if self.inplace and self.coll in ("reduce_scatter", "reduce_scatter_block"):
            TALLY.check(desc, "tail", self.rbuf[n_res:], self.mine[n_res:], True, offset=n_res,
                        waiver=WAIVE_RS_TAIL if self.coll == "reduce_scatter" else None)


def run_case(case):
    """Issue, complete and check one case; an MPI error is one failure."""
    try:
        req = case.start()
        if req is not None:
            req.Wait()
    except MPI.Exception as e:
        TALLY.fail(case.describe(), "call", "MPI error: %s" % e.Get_error_string())
        return
    case.finish()


# --------------------------------------------------------------------- phases

def phase_matrix(comms):
    small = [1, 5, 17, 64]
    for ci, cx in enumerate(comms):
        for k, coll in enumerate(["allreduce", "reduce_scatter", "reduce_scatter_block"]):
            for p, (t, op) in enumerate(PAIRS):
                mode = (p + ci) % 4          # over the 4 comms: all 4 modes
                choice = t.mpi_choices[(ci // 2 + p + k) % len(t.mpi_choices)]
                count = small[(p + k + ci) % len(small)]
                run_case(Case(cx, coll, t, choice, op, count, mode >> 1, mode & 1))
        for p, t in enumerate(GATHER_TYPES):
            for mode in range(4):
                choice = t.mpi_choices[(p + mode + ci) % len(t.mpi_choices)]
                count = small[(p + mode + ci) % len(small)]
                run_case(Case(cx, "allgather", t, choice, None, count, mode >> 1, mode & 1))


COUNT_PAIRS = [("int32", "SUM"), ("float64", "MAX"), ("uint8", "BXOR"), ("int64", "PROD"),
               ("float32", "MIN"), ("bool", "LXOR"), ("byte", "BOR"), ("uint16", "LAND"),
               ("int8", "SUM"), ("uint64", "MIN"), ("int16", "BAND"), ("uint32", "LOR")]


def phase_counts(comms):
    i = 0
    for cx in comms:
        for coll in COLLS:
            for mode in range(4):
                shapes = ["mixed", "onehot"] if coll == "reduce_scatter" else ["mixed"]
                for count in (0, 1, 7):
                    for shape in shapes:
                        if shape == "onehot" and count == 0:
                            continue
                        tname, op = COUNT_PAIRS[i % len(COUNT_PAIRS)]
                        i += 1
                        t = DT[tname]
                        run_case(Case(cx, coll, t, t.mpi_choices[i % len(t.mpi_choices)],
                                      None if coll == "allgather" else op, count,
                                      mode >> 1, mode & 1, shape))


LARGE_PAIRS = [("float64", "SUM"), ("int32", "MAX"), ("uint8", "BXOR"), ("int64", "SUM"),
               ("float32", "PROD"), ("bool", "LOR"), ("int16", "MIN"), ("byte", "BAND")]


def phase_large(comms):
    """A count over 1 MiB for each collective x mode, the communicators in
    turn (the four modes of each collective spread over them)."""
    i = 0
    for coll in COLLS:
        for mode in range(4):
            cx = comms[(mode + COLLS.index(coll)) % len(comms)]
            tname, op = LARGE_PAIRS[i % len(LARGE_PAIRS)]
            i += 1
            t = DT[tname]
            count = MIB // t.np.itemsize + 37       # just over 1 MiB, odd
            run_case(Case(cx, coll, t, t.mpi_choices[0],
                          None if coll == "allgather" else op, count, mode >> 1, mode & 1))


def phase_overlap(comms):
    """Nonblocking calls on all communicators outstanding together, waited
    for in reverse order; twice, with the collectives rotated."""
    plans = [("int32", "SUM", 9), ("float64", "MIN", 300), ("uint8", "BOR", 4099),
             ("int64", "BXOR", 33)]
    for rnd in range(2):
        cases = []
        for ci, cx in enumerate(comms):
            coll = COLLS[(ci + rnd) % len(COLLS)]
            tname, op, count = plans[(ci + rnd) % len(plans)]
            t = DT[tname]
            cases.append(Case(cx, coll, t, None, None if coll == "allgather" else op, count,
                              (ci + rnd) % 2, True))
        reqs = []
        errors = {}
        for case in cases:
            try:
                reqs.append(case.start())
            except MPI.Exception as e:
                errors[id(case)] = e
                reqs.append(None)
        for case, req in reversed(list(zip(cases, reqs))):
            if req is None:
                continue
            try:
                req.Wait()
            except MPI.Exception as e:
                errors[id(case)] = e
        for case in cases:
            if id(case) in errors:
                TALLY.fail(case.describe(), "call",
                           "MPI error: %s" % errors[id(case)].Get_error_string())
            else:
                case.finish()


# ------------------------------------------------------------------ fallbacks

def _mod7(inbuf, inoutbuf, datatype):
    a = np.frombuffer(inbuf, dtype=np.int32)
    b = np.frombuffer(inoutbuf, dtype=np.int32)
    b[:] = (a + b) % 7


MOD7 = None


def fallback_call(desc, fn):
    try:
        req = fn()
        if req is not None:
            req.Wait()
        return True
    except MPI.Exception as e:
        TALLY.fail(desc, "call", "MPI error: %s" % e.Get_error_string())
        return False


def phase_fallback(comms):
    global MOD7
    MOD7 = MPI.Op.Create(_mod7, commute=True)
    for ci, cx in enumerate(comms):
        c, size, rank = cx.comm, cx.size, cx.rank

        # user-defined commutative op: (a + b) mod 7, inputs in [0, 7)
        for inplace in (0, 1):
            for nb in (0, 1):
                seq = next_seq()
                n = 11 + ci
                ins = [uniform_int(hash_bits(n, seq * 7919 + j), 0, 6).astype(np.int32)
                       for j in range(size)]
                exp = np.sum(np.stack(ins), axis=0) % 7 if size > 1 else ins[0]
                desc = ("comm=%s coll=allreduce dtype=int32/MPI_INT op=user(mod7) inplace=%d "
                        "nonblocking=%d count=%d" % (cx.label, inplace, nb, n))
                r = ins[rank].copy() if inplace else poisoned(n, np.int32)
                s = MPI.IN_PLACE if inplace else ins[rank].copy()
                if fallback_call(desc, lambda: (c.Iallreduce if nb else c.Allreduce)(s, r, MOD7)):
                    TALLY.check(desc, "result", r, exp.astype(np.int32))
        # ... and in reduce_scatter_block, in place (the tail must stay)
        seq = next_seq()
        blk = 3
        ins = [uniform_int(hash_bits(blk * size, seq * 7919 + j), 0, 6).astype(np.int32)
               for j in range(size)]
        full = np.sum(np.stack(ins), axis=0) % 7 if size > 1 else ins[0]
        desc = ("comm=%s coll=reduce_scatter_block dtype=int32/MPI_INT op=user(mod7) inplace=1 "
                "nonblocking=0 count=%d" % (cx.label, blk))
        r = ins[rank].copy()
        if fallback_call(desc, lambda: c.Reduce_scatter_block(MPI.IN_PLACE, [r, MPI.INT], MOD7)):
            TALLY.check(desc, "result", r[:blk], full[rank * blk:(rank + 1) * blk].astype(np.int32))
            TALLY.check(desc, "tail", r[blk:], ins[rank][blk:], True)

        # MAXLOC / MINLOC on MPI.DOUBLE_INT: ties go to the smallest index
        pair = np.dtype([("v", "f8"), ("i", "i4")], align=True)
        if pair.itemsize == MPI.DOUBLE_INT.Get_extent()[1]:
            for opname in ("MAXLOC", "MINLOC"):
                seq = next_seq()
                n = 13
                vals = [uniform_int(hash_bits(n, seq * 7919 + j), -3, 3).astype(np.float64)
                        for j in range(size)]
                idxs = [np.full(n, (j * 5 + 2) % (size + 3), dtype=np.int32) for j in range(size)]
                v = np.stack(vals)
                ix = np.stack(idxs)
                best = v.max(axis=0) if opname == "MAXLOC" else v.min(axis=0)
                ei = np.where(v == best, ix, np.iinfo(np.int32).max).min(axis=0)
                s = np.zeros(n, pair)
                s["v"], s["i"] = vals[rank], idxs[rank]
                r = np.zeros(n, pair)
                desc = ("comm=%s coll=allreduce dtype=double_int/MPI_DOUBLE_INT op=%s inplace=0 "
                        "nonblocking=0 count=%d" % (cx.label, opname, n))
                if fallback_call(desc, lambda: c.Allreduce([s, MPI.DOUBLE_INT],
                                                           [r, MPI.DOUBLE_INT],
                                                           getattr(MPI, opname))):
                    TALLY.check(desc, "result(value)", r["v"].copy(), best)
                    TALLY.check(desc, "result(index)", r["i"].copy(), ei.astype(np.int32))

        # complex128 SUM: allreduce and reduce_scatter_block
        for coll in ("allreduce", "reduce_scatter_block"):
            seq = next_seq()
            blk = 6
            n = blk if coll == "allreduce" else blk * size
            ins = []
            for j in range(size):
                b = hash_bits(n, seq * 7919 + j)
                ins.append(uniform_int(b, -1000, 1000) + 1j * uniform_int(b >> np.uint64(20),
                                                                           -1000, 1000))
            full = np.sum(np.stack(ins), axis=0)
            r = poisoned(blk, np.complex128)
            s = ins[rank].copy()
            desc = ("comm=%s coll=%s dtype=complex128/MPI_C_DOUBLE_COMPLEX op=SUM inplace=0 "
                    "nonblocking=0 count=%d" % (cx.label, coll, blk))
            if coll == "allreduce":
                ok = fallback_call(desc, lambda: c.Allreduce(s, r, MPI.SUM))
                exp = full
            else:
                ok = fallback_call(desc, lambda: c.Reduce_scatter_block(s, r, MPI.SUM))
                exp = full[rank * blk:(rank + 1) * blk]
            if ok:
                TALLY.check(desc, "result", r, exp)

        # derived datatypes in allgather, 3 ints per element: a contiguous
        # type on both sides, in place, and against INT on the send side
        # (dfccl carries contiguous layouts as bytes); a strided vector
        # (3 ints at stride 2, extent 5 ints) on the send side, on the
        # receive side (nonblocking), and in place: not contiguous, so
        # Open MPI's own allgather, or packed where dfccl packs. In a
        # strided receive buffer the gaps must keep their poison.
        ctype = MPI.INT.Create_contiguous(3).Commit()
        vtype = MPI.INT.Create_vector(3, 1, 2).Commit()
        n = 5      # elements of the derived type per rank
        picks = (5 * np.arange(n * size)[:, None] + 2 * np.arange(3)[None, :]).ravel()
        for variant in ("contiguous", "in_place", "mixed", "strided_send", "strided_recv",
                        "strided_in_place"):
            seq = next_seq()
            ins = [uniform_int(hash_bits(3 * n, seq * 7919 + j), -10 ** 6, 10 ** 6)
                   .astype(np.int32) for j in range(size)]
            s = ins[rank].copy()
            strided = variant in ("strided_recv", "strided_in_place")
            span = (5 if strided else 3) * n * size
            r = poisoned(span + GUARD, np.int32)
            rv = r[:span]
            if strided:    # element m of the whole buffer: ints 5m, 5m+2, 5m+4
                exp = poisoned(span, np.int32)
                exp[picks] = np.concatenate(ins)
                if variant == "strided_in_place":
                    rv[picks[rank * 3 * n:(rank + 1) * 3 * n]] = s
            else:
                exp = np.concatenate(ins)
                if variant == "in_place":
                    rv[rank * 3 * n:(rank + 1) * 3 * n] = s
            if variant == "strided_send":
                sv = poisoned(5 * n, np.int32)
                sv[picks[:3 * n]] = s
            nb = variant == "strided_recv"
            dname = {"contiguous": "contiguous(3,MPI_INT)",
                     "in_place": "contiguous(3,MPI_INT)",
                     "mixed": "contiguous(3,MPI_INT) send=MPI_INT x3",
                     "strided_send": "MPI_INT x3 send=vector(3,1,2,MPI_INT)",
                     "strided_recv": "vector(3,1,2,MPI_INT) send=MPI_INT x3",
                     "strided_in_place": "vector(3,1,2,MPI_INT)"}[variant]
            desc = ("comm=%s coll=allgather dtype=int32/%s inplace=%d nonblocking=%d count=%d"
                    % (cx.label, dname, "in_place" in variant, nb, n))
            if variant == "contiguous":
                fn = lambda: c.Allgather([s, n, ctype], [rv, n, ctype])
            elif variant == "in_place":
                fn = lambda: c.Allgather(MPI.IN_PLACE, [rv, n, ctype])
            elif variant == "mixed":
                fn = lambda: c.Allgather([s, 3 * n, MPI.INT], [rv, n, ctype])
            elif variant == "strided_send":
                fn = lambda: c.Allgather([sv, n, vtype], [rv, 3 * n, MPI.INT])
            elif variant == "strided_recv":
                fn = lambda: c.Iallgather([s, 3 * n, MPI.INT], [rv, n, vtype])
            else:
                fn = lambda: c.Allgather(MPI.IN_PLACE, [rv, n, vtype])
            if fallback_call(desc, fn):
                TALLY.check(desc, "result", rv, exp, True)
                TALLY.check(desc, "guard", r[span:], poisoned(GUARD, np.int32), True, offset=span)
        ctype.Free()
        vtype.Free()
    MOD7.Free()


# ----------------------------------------------------------------------- main

def _sum3(a, b):
    return tuple(x + y for x, y in zip(a, b))


def main():
    t0 = time.time()
    comms = make_comms()
    phases = [("matrix", phase_matrix), ("counts", phase_counts), ("large", phase_large),
              ("overlap", phase_overlap), ("fallback", phase_fallback)]
    report = []
    for name, fn in phases:
        p0, f0, t1 = TALLY.passed, TALLY.failed, time.time()
        fn(comms)
        report.append("%s %d/%d in %.1f s" % (name, TALLY.passed - p0,
                                              TALLY.passed - p0 + TALLY.failed - f0,
                                              time.time() - t1))
    calls = _SEQ[0]
    for cx in comms[1:]:
        cx.comm.Free()
    # the verdict: every rank's counts, through one allreduce on COMM_WORLD
    passed, failed, waived = WORLD.allreduce((TALLY.passed, TALLY.failed, TALLY.waived),
                                             op=_sum3)
    if WRANK == 0:
        say("%s: route %s, %d ranks, %d calls per rank, %d waived; rank 0 checks: %s; %.1f s" %
            (PROG, ROUTE, WSIZE, calls, waived, ", ".join(report), time.time() - t0))
        say("%s: %d passed, %d failed" % (PROG, passed, failed))
    return 1 if failed or TALLY.failed else 0


if __name__ == "__main__":
    sys.exit(main())
