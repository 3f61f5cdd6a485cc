"""The embedding gradient three ways: sums of rows into repeated ids (dweight = zeros with
the upstream gradient's rows added at the ids' rows), on the CPU or the GPU.

    PYTHONPATH=. python -m benchmarks.bench_index_add                 # NumPy
    PYTHONPATH=. python -m benchmarks.bench_index_add --device gpu    # CuPy
    PYTHONPATH=. python -m benchmarks.bench_index_add --quick         # tiny shapes

- add.at: `xp.add.at(out, ids, g)`, in index order on NumPy (minigrad's CPU path), with
  atomics on CuPy, whose float sums change from run to run;
- segment sum: minigrad's path, minigrad/kernels/segment_sum.py: on the GPU a stable
  sort of the ids, then each run of equal ids summed as a pairwise tree; on the CPU a
  Numba kernel making add.at's additions in add.at's order, without a sort;
- one-hot: `onehot(ids).T @ g`, the product through BLAS/cuBLAS (vocab x ids x d
  multiply-adds and a vocab x ids matrix; 0 * inf spreads NaN to every row).

Ids are drawn from a Zipf law (p(k) ~ 1/(k+1)), so the frequent ids repeat hundreds of
times in a batch, as words do. Times are medians per call, synchronised on the GPU. The
last columns say whether each way gave the same bits on two runs (atomics need not).
"""
from __future__ import annotations

import argparse

import numpy as np

from benchmarks.timing import median_times, print_table

# (name, ids in the batch, vocabulary, d_model) of the embedding gradients in training
SHAPES = [
    ("toy_translate cpu", 128 * 8, 163, 64),
    ("toy_translate gpu", 128 * 8, 163, 256),
    ("paper-base bench", 16 * 16, 1000, 512),
    ("paper-base, 32k vocab", 16 * 16, 32000, 512),
    ("4096 ids, 32k vocab", 4096, 32000, 512),
]
QUICK_SHAPES = [("tiny", 64, 10, 8)]


def zipf_ids(rng: np.random.Generator, count: int, vocab: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, vocab + 1)
    return rng.choice(vocab, size=count, p=weights / weights.sum())


def candidates(xp, ids, grad, vocab: int) -> dict:
    from minigrad.kernels.segment_sum import segment_sum

    def add_at():
        out = xp.zeros((vocab, grad.shape[1]), dtype=grad.dtype)
        xp.add.at(out, ids, grad)
        return out

    def one_hot():
        return (ids[None, :] == xp.arange(vocab)[:, None]).astype(grad.dtype) @ grad

    return {"add.at": add_at, "segment sum": lambda: segment_sum(grad, ids, vocab),
            "one-hot": one_hot}


def rows(xp, shapes, repeats: int, synchronize) -> list:
    table = []
    rng = np.random.default_rng(0)
    for name, count, vocab, d_model in shapes:
        host_ids = zipf_ids(rng, count, vocab)
        ids = xp.asarray(host_ids)
        grad = xp.asarray(rng.standard_normal((count, d_model), dtype=np.float32))
        ways = candidates(xp, ids, grad, vocab)

        def synced(fn):
            return lambda: (fn(), synchronize())

        times = median_times({way: synced(fn) for way, fn in ways.items()}, repeats=repeats,
                             warmup=min(repeats, 3))
        repeatable = {way: bool((fn() == fn()).all()) for way, fn in ways.items()}
        table.append([name, f"({count}, {vocab}, {d_model})", int(np.bincount(host_ids).max()),
                      *(f"{times[way] * 1e6:.0f}" for way in ways),
                      " ".join("yes" if repeatable[way] else "NO" for way in ways)])
        print(f"[{name}] done", flush=True)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--quick", action="store_true", help="tiny shapes, 2 repeats")
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per way")
    args = parser.parse_args()
    if args.device == "gpu":
        import minigrad as mg

        xp = mg.backend.cupy_or_none()
        if xp is None:
            raise SystemExit(f"no GPU: {mg.cuda.unavailable_reason()}")
        synchronize = xp.cuda.Device().synchronize
    else:
        xp, synchronize = np, lambda: None
    shapes = QUICK_SHAPES if args.quick else SHAPES
    table = rows(xp, shapes, repeats=2 if args.quick else args.repeats, synchronize=synchronize)
    print(f"embedding gradient on {args.device} ({xp.__name__}), float32, us per call")
    print_table(["case", "(ids, vocab, d)", "most repeats", "add.at us", "segment sum us",
                 "one-hot us", "same bits twice (add.at seg 1hot)"], table)


if __name__ == "__main__":
    main()
