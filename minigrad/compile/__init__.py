"""mg.compile: capture a step once, replay it without per-op Python (docs/compile.md).

    traced.py    the array every tensor holds during a capture, reporting each operation
    steps.py     what a capture records: slot references and the kinds of step
    slots.py     the numbered arrays of a capture; which tensors the external ones are
    recorder.py  the steps, recorded as the step runs
    patches.py   where a capture listens (ops' forwards, NumPy creation, random draws, ...)
    rollback.py  undoing what the capture's eager run changed
    values.py    Python values a step reads: remembered, compared, put back
    schedule.py  the order of the steps: guards before lasting effects; when slots die
    plan.py      a record made ready to replay
    fusion.py    runs of elementwise steps grouped into one generated kernel each
    elementwise.py  which steps fuse, and what each computes
    kernel_source.py  a fused group's Numba kernel, as Python source
    kernel_cache.py   generated kernels compiled once, cached on disk
    folding.py   steps whose results are the same at every replay, run once
    guards.py    when a plan fits a call
    capture.py   one capture, from the eager run to an Entry
    snapshot.py  what the eager run left in an array, kept to check the first replay
    replay.py    replaying an Entry; a compiled forward's nodes in the eager graph
    results.py   namedtuples and dataclasses in what a step returns
    cuda_graph.py  a GPU plan captured into a CUDA graph, launched as one call
    api.py       mg.compile, CompiledFunction, OptimizedModule
"""
from minigrad.compile.api import CACHE_SIZE_LIMIT, OptimizedModule, Unsupported, compile

__all__ = ["CACHE_SIZE_LIMIT", "OptimizedModule", "Unsupported", "compile"]
