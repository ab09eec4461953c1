#!/usr/bin/python3
"""train_example.py - a data-parallel training loop whose gradients are
allreduced through MPI (and so through coll/dfccl), checked against the
same training in one process.

    mpirun -np 4 contrib/examples/train_example.py [--array numpy|cupy] [--steps N]

The model is a two-layer perceptron (tanh hidden layer) fitted to a
synthetic regression by plain gradient descent, in float64. Every rank
holds the whole model and a shard of each batch (rows rank, rank + size,
...); it computes its shard's gradient sums, packs them into one buffer and
sums that over the ranks with one MPI_Allreduce per step (as
data-parallel frameworks allreduce bucketed gradients); every rank then
applies the same update. Each rank also trains the reference model on the
whole batch alone, and after every step the two must agree to 1e-9
(relative): only the order of the sums differs.

--array cupy keeps the model, the data and the gradient buffer in GPU
memory (CuPy): MPI receives device buffers, which coll/dfccl carries on the
GPU; the reference runs in NumPy on the host.

Prints the loss as it falls and "train_example: N passed, M failed".
"""
import argparse
import sys

import numpy as np
from mpi4py import MPI


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--array", choices=("numpy", "cupy"), default="numpy")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=7)
    return p.parse_args()


def make_problem(seed, batch, features=16):
    """The same data and initial weights on every rank."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, features))
    w_true = rng.standard_normal((features, 1))
    y = np.tanh(x @ w_true) + 0.1 * rng.standard_normal((batch, 1))
    return x, y, features


def init_params(seed, features, hidden):
    rng = np.random.default_rng(seed + 1)
    return [rng.standard_normal((features, hidden)) / np.sqrt(features),
            np.zeros((1, hidden)),
            rng.standard_normal((hidden, 1)) / np.sqrt(hidden),
            np.zeros((1, 1))]


def grad_sums(xp, params, x, y):
    """Sums over the rows of x of the squared-error gradient, and of the loss."""
    w1, b1, w2, b2 = params
    h = xp.tanh(x @ w1 + b1)
    err = h @ w2 + b2 - y                      # d(0.5 err^2)/d(out)
    g_w2 = h.T @ err
    g_b2 = err.sum(axis=0, keepdims=True)
    d_h = (err @ w2.T) * (1.0 - h * h)
    g_w1 = x.T @ d_h
    g_b1 = d_h.sum(axis=0, keepdims=True)
    loss = 0.5 * float((err * err).sum())
    return [g_w1, g_b1, g_w2, g_b2], loss


def main():
    opts = parse()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    xp = np
    if opts.array == "cupy":
        import cupy
        xp = cupy
    x, y, features = make_problem(opts.seed, opts.batch)
    ref = init_params(opts.seed, features, opts.hidden)
    params = [xp.array(p) for p in ref]   # copies: the reference trains apart
    shard_x, shard_y = xp.asarray(x[rank::size]), xp.asarray(y[rank::size])
    sizes = [p.size for p in ref]
    bucket = xp.zeros(sum(sizes) + 1)          # every gradient, and the loss, in one buffer

    passed = failed = 0
    first_loss = last_loss = None
    for step in range(opts.steps):
        grads, loss = grad_sums(xp, params, shard_x, shard_y)
        at = 0
        for g in grads:
            bucket[at:at + g.size] = g.ravel()
            at += g.size
        bucket[at] = loss
        if opts.array == "cupy":
            xp.cuda.get_current_stream().synchronize()   # the buffer is written before MPI reads it
        comm.Allreduce(MPI.IN_PLACE, bucket, op=MPI.SUM)
        at = 0
        for p, n in zip(params, sizes):
            p -= opts.lr / opts.batch * bucket[at:at + n].reshape(p.shape)
            at += n
        total_loss = float(bucket[at]) / opts.batch

        ref_grads, ref_loss = grad_sums(np, ref, x, y)
        for p, g in zip(ref, ref_grads):
            p -= opts.lr / opts.batch * g
        ours = [np.asarray(p.get() if opts.array == "cupy" else p) for p in params]
        ok = all(np.allclose(a, b, rtol=1e-9, atol=1e-12) for a, b in zip(ours, ref)) and \
            abs(total_loss - ref_loss / opts.batch) <= 1e-9 * max(1.0, ref_loss / opts.batch)
        if ok:
            passed += 1
        else:
            failed += 1
            worst = max(float(np.max(np.abs(a - b))) for a, b in zip(ours, ref))
            print(f"FAIL rank {rank} step {step}: parameters differ from one-process training"
                  f" by up to {worst:.3g}", file=sys.stderr)
        first_loss = total_loss if first_loss is None else first_loss
        last_loss = total_loss
        if rank == 0 and (step % 10 == 0 or step == opts.steps - 1):
            print(f"  step {step:3d}: loss {total_loss:.6f}")
    # training must also have trained: the loss fell
    if last_loss < first_loss:
        passed += 1
    else:
        failed += 1
        print(f"FAIL rank {rank}: loss did not fall ({first_loss} -> {last_loss})",
              file=sys.stderr)
    totals = comm.allreduce(np.array([passed, failed]), op=MPI.SUM)
    if rank == 0:
        print(f"train_example: {int(totals[0])} passed, {int(totals[1])} failed"
              f" ({size} ranks, {opts.steps} steps, {opts.array} arrays)")
    return 0 if totals[1] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
