"""Where a fused group's kernel comes from: a generated Numba kernel for a plan on the
CPU, a generated `cupy.ElementwiseKernel` for a plan on the GPU.

A target says which groups it can run (every array a group reads and writes on its
device), writes the group's kernel source, compiles it once per source, and allocates
the kernel's results:

- CPU: kernel_source.py's loop nest, compiled by Numba and cached on disk
  (kernel_cache.py);
- GPU: cuda_kernel_source.py's loop body, compiled by CuPy (NVRTC), which caches the
  compiled kernel on disk itself (`~/.cupy/kernel_cache`); here one ElementwiseKernel
  object per source, so that every group doing the same work shares it.
"""
from __future__ import annotations

import importlib.util
import threading

import numpy as np

from minigrad.backend.device import cupy_or_none
from minigrad.compile.array_info import ArrayInfo
from minigrad.compile.cuda_kernel_source import OPTIONS, cuda_source
from minigrad.compile.elementwise import Node
from minigrad.compile.kernel_cache import load_kernel
from minigrad.compile.kernel_source import kernel_source


class CpuTarget:
    name = "cpu"
    empty = staticmethod(np.empty)
    unfused_ops = frozenset()  # elementwise ops it leaves to the array library

    @staticmethod
    def holds(array: ArrayInfo) -> bool:
        return array.array_type is np.ndarray

    @staticmethod
    def build(nodes: list[Node], inputs: list[int], outputs: list[int], constants: dict,
              arrays: dict, shape: tuple) -> tuple[str, object]:
        """The kernel's source and the kernel `fused(in0, ..., out0, ...)`."""
        source = kernel_source(nodes, inputs, outputs, constants, arrays, shape)
        return source, load_kernel(source)


class GpuTarget:
    name = "gpu"
    # a pad would read its input at a shifted index, which the ElementwiseKernel's
    # elementwise indexing has no form for: left to CuPy, ending the group before it
    unfused_ops = frozenset({"pad"})

    def __init__(self, cupy):
        self.cupy = cupy
        self.empty = cupy.empty
        self._kernels: dict[str, object] = {}  # text of a source -> its kernel
        self._lock = threading.Lock()

    def holds(self, array: ArrayInfo) -> bool:
        return issubclass(array.array_type, self.cupy.ndarray)

    def build(self, nodes: list[Node], inputs: list[int], outputs: list[int],
              constants: dict, arrays: dict, shape: tuple) -> tuple[str, object] | None:
        """The kernel's source and the kernel `fused(in0, ..., out0, ...)`; None when a
        node has no exact CUDA form."""
        source = cuda_source(nodes, inputs, outputs, constants, arrays)
        if source is None:
            return None
        text = source.text()
        with self._lock:
            kernel = self._kernels.get(text)
            if kernel is None:
                kernel = self._kernels[text] = self.cupy.ElementwiseKernel(
                    source.in_params, source.out_params, source.operation,
                    name="minigrad_fused", options=OPTIONS)
        return text, kernel


CPU = CpuTarget()
_gpu_targets: dict[int, GpuTarget] = {}  # id of a cupy module -> its target


def target_for(arrays: dict):
    """The GPU target when any of a plan's arrays is on the GPU, else the CPU one (None
    without Numba: no CPU kernels)."""
    if not any(array.on_device for array in arrays.values()):
        return CPU if _has_numba() else None
    cupy = cupy_or_none()
    target = _gpu_targets.get(id(cupy))
    if target is None:
        target = _gpu_targets[id(cupy)] = GpuTarget(cupy)
    return target


def _has_numba() -> bool:
    return importlib.util.find_spec("numba") is not None
