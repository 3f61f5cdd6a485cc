"""Testing aids that ship with minigrad.

`minigrad.testing.fake_cupy` is a strict NumPy-backed stand-in for the parts of CuPy that
minigrad uses. `MINIGRAD_FAKE_GPU=1` makes it the "gpu" device, so the whole GPU code
path (device placement, host/device copies, CuPy's API and its quirks) runs and is
tested on machines without a GPU. It checks the plumbing, not CUDA: numerics, cuBLAS,
the Numba CUDA kernels on real hardware and speed need a GPU (benchmarks/gpu_check.sh).
"""
