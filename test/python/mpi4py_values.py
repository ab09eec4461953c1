"""mpi4py_values.py - mpi4py_check's datatypes, ops, deterministic inputs
and reference results: every rank builds every member's input from a hash
of (case, rank), so each computes the expected result alone."""
import numpy as np
from mpi4py import MPI

POISON = 0xA5      # byte value of the poison after each receive span


# ---------------------------------------------------------------- types, ops

class DType:
    """A NumPy dtype and the MPI types it may be sent as: None means the
    type mpi4py infers from the array; the others are explicit aliases."""

    def __init__(self, name, np_type, kind, mpi_choices, ops):
        self.name = name
        self.np = np.dtype(np_type)
        self.kind = kind            # 'i', 'u', 'f', 'b' (C bool), 'x' (MPI.BYTE), 'c' (MPI.CHAR)
        self.mpi_choices = mpi_choices
        self.ops = ops


ARITH = ["SUM", "PROD", "MIN", "MAX"]
LOGIC = ["LAND", "LOR", "LXOR"]
BITS = ["BAND", "BOR", "BXOR"]
INT_OPS = ARITH + LOGIC + BITS

DTYPES = [
    DType("int8", np.int8, "i", [None, MPI.INT8_T], INT_OPS),
    DType("uint8", np.uint8, "u", [None, MPI.UINT8_T], INT_OPS),
    DType("int16", np.int16, "i", [None, MPI.INT16_T], INT_OPS),
    DType("uint16", np.uint16, "u", [None, MPI.UINT16_T], INT_OPS),
    DType("int32", np.int32, "i", [None, MPI.INT32_T], INT_OPS),
    DType("uint32", np.uint32, "u", [None, MPI.UINT32_T], INT_OPS),
    DType("int64", np.int64, "i", [None, MPI.INT64_T, MPI.LONG_LONG], INT_OPS),
    DType("uint64", np.uint64, "u", [None, MPI.UINT64_T, MPI.UNSIGNED_LONG_LONG], INT_OPS),
    DType("float32", np.float32, "f", [None, MPI.FLOAT], ARITH),
    DType("float64", np.float64, "f", [None, MPI.DOUBLE], ARITH),
    DType("bool", np.bool_, "b", [None, MPI.C_BOOL], LOGIC),
    DType("byte", np.uint8, "x", [MPI.BYTE], BITS),
]
CHAR = DType("char", "S1", "c", [None, MPI.CHAR], [])   # allgather only
DT = {t.name: t for t in DTYPES}
GATHER_TYPES = DTYPES + [CHAR]
PAIRS = [(t, op) for t in DTYPES for op in t.ops]


def mpi_type_of(t, choice):
    if choice is not None:
        return choice
    return MPI._typedict[t.np.char] if t.kind != "c" else MPI.CHAR


def mpi_name(t, choice):
    name = mpi_type_of(t, choice).Get_name()
    return "%s/%s%s" % (t.name, name, "" if choice is not None else "(auto)")


# --------------------------------------------------------------- input values

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def hash_bits(n, seed, start=0):
    """Pseudo-random 64-bit words for elements start .. start+n-1 (splitmix64
    of index + seed, vectorized): any slice of a sequence can be made alone."""
    with np.errstate(over="ignore"):
        z = (np.arange(start, start + n, dtype=np.uint64) +
             np.uint64((seed * 0x9E3779B1) & 0xFFFFFFFFFFFFFFFF))
        z *= _M1
        z ^= z >> np.uint64(30)
        z *= _M2
        z ^= z >> np.uint64(27)
        z *= _M3
        z ^= z >> np.uint64(31)
    return z


def uniform_int(bits, lo, hi):
    """Integers in [lo, hi] (inclusive), int64 or, for a wide range from 0,
    uint64. Ranges up to 2**62 wide: the low 62 bits modulo the span. Wider
    ones (64-bit SUM, MIN, MAX): [-2**e, 2**e) or [0, 2**e), the largest
    power of two that fits, from the bits shifted right."""
    span = hi - lo + 1
    if span <= 1 << 62:
        low = (bits & np.uint64((1 << 62) - 1)).astype(np.int64)
        return low % np.int64(span) + np.int64(lo)
    if lo < 0:
        e = min(-lo, hi + 1).bit_length() - 1
        return bits.view(np.int64) >> np.int64(63 - e)
    e = min(hi + 1, 1 << 64).bit_length() - 1
    return bits >> np.uint64(64 - e) if e < 64 else bits.copy()


def fraction(bits, p):
    """True with probability about p, from the high bits."""
    return (bits >> np.uint64(40)).astype(np.int64) % 1000 < int(p * 1000)


def make_input(t, op, n, size, seed, start=0):
    """Elements start .. start+n-1 of one member's input, of type t for op
    (None: allgather), such that the reduction over `size` members is exact
    and meaningful. Element-wise: a slice is the same as part of the whole."""
    bits = hash_bits(n, seed, start)
    dt = t.np
    if t.kind == "c":
        return (uniform_int(bits, 33, 126)).astype(np.uint8).view("S1")
    if op is None or (t.kind in "x" and op in BITS):
        if t.kind == "f":
            m = 1 << (24 if dt.itemsize == 4 else 53)
            return uniform_int(bits, -m, m).astype(dt)
        if t.kind == "b":
            return (bits & np.uint64(1)).astype(np.bool_)
        return bits.astype(dt)          # full range, every bit pattern
    if t.kind == "b":                   # logical ops: about half of the
        p0 = 1.0 - 0.5 ** (1.0 / size)  # elements' LAND and LOR vary
        return ~fraction(bits, p0)
    if op in BITS:
        return bits.astype(dt)
    if op in LOGIC:                     # zero or any non-zero value
        p0 = 1.0 - 0.5 ** (1.0 / size)
        v = bits.astype(dt)
        v[v == 0] = 1
        v[fraction(bits, p0)] = 0
        return v
    if t.kind == "f":
        top = float(1 << (24 if dt.itemsize == 4 else 53))
    else:
        info = np.iinfo(dt)
        top = float(info.max)
    if op == "SUM":                     # partial sums never leave the range
        lim = int(top) // max(size, 1)
        lo = 0 if t.kind == "u" else -lim
        return uniform_int(bits, lo, lim).astype(dt)
    if op == "PROD":                    # factors -1, 1, 2 while 2**size fits
        two = 2.0 ** size <= top
        choices = [1, 2] if t.kind == "u" else [-1, 1, 2]
        if not two:
            choices = [1] if t.kind == "u" else [-1, 1]
        idx = uniform_int(bits, 0, len(choices) - 1)
        return np.asarray(choices, dtype=dt)[idx]
    # MIN, MAX: the whole range of the type
    if t.kind == "f":
        m = int(top)
        return uniform_int(bits, -m, m).astype(dt)
    return bits.astype(dt)


def reduce_ref(stack, t, op):
    """The expected reduction over axis 0 of a (members, n) stack. With one
    member no operation is applied: the result is the input (a logical op
    does not turn 5 into 1 there)."""
    dt = t.np
    if stack.shape[0] == 1:
        return stack[0].copy()
    if op == "SUM":
        return np.sum(stack, axis=0, dtype=dt)
    if op == "PROD":
        return np.prod(stack, axis=0, dtype=dt)
    if op == "MIN":
        return np.min(stack, axis=0) if stack.shape[1] else stack[0]
    if op == "MAX":
        return np.max(stack, axis=0) if stack.shape[1] else stack[0]
    if op in LOGIC:
        f = {"LAND": np.logical_and, "LOR": np.logical_or, "LXOR": np.logical_xor}[op]
        return f.reduce(stack != 0, axis=0).astype(dt)
    f = {"BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}[op]
    return f.reduce(stack, axis=0).astype(dt)


def poisoned(n, dt):
    a = np.empty(n, dtype=dt)
    a.view(np.uint8)[:] = POISON
    return a


def first_diff(got, exp, bitwise):
    """Index of the first element that differs, or -1."""
    if bitwise or got.dtype.kind in "bSx":
        g = got.view(np.uint8).reshape(len(got), -1) if len(got) else got.view(np.uint8)
        e = exp.view(np.uint8).reshape(len(exp), -1) if len(exp) else exp.view(np.uint8)
        bad = np.flatnonzero(np.any(g != e, axis=1)) if len(got) else []
    else:
        bad = np.flatnonzero(got != exp)
    return int(bad[0]) if len(bad) else -1
