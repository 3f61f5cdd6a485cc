"""`mg.backends`: PyTorch's switches for the libraries under its ops (cuBLAS, cuDNN, MPS,
oneDNN, OpenMP), so that scripts which set or ask about them run unchanged.

minigrad computes on NumPy, CuPy and its own Numba kernels and uses none of these
libraries' special modes: every switch here reads back what was set and changes nothing
else, and every is_available() says False (but backends.cuda.is_built(): whether CuPy,
minigrad's GPU backend, is installed). Each module says what minigrad does instead.

    import minigrad.backends.cudnn as cudnn
    cudnn.benchmark = True                                  # accepted, no effect
    mg.backends.cuda.matmul.allow_tf32 = False              # float32 matmuls stay float32
"""
from minigrad.backends import cuda, cudnn, mkldnn, mps, openmp

__all__ = ["cuda", "cudnn", "mkldnn", "mps", "openmp"]
