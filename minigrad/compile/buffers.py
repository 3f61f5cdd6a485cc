"""Buffers: the arrays of a CPU plan that are written into memory kept from one replay to
the next, instead of memory each step allocates afresh.

A new array is, past a size, new pages to the operating system, and the first write to
each page faults: about 2.7 us per 4 KiB page on a 2-core virtual machine, where a fused
kernel computes a page's 1024 float32 numbers in a fraction of that. The C allocator
gives freed memory back once enough of it is free, so a step that makes and frees
megabytes of arrays faults on every step anew (toy_translate's step: over 5,000 faults).

A plan knows every array its step makes, its shape, and the step after which nothing
reads it. The results of fused kernels and of matrix products (the steps that can write
into memory they are given) of 64 KiB or more get a place in one block of memory when
their memory is used only inside the plan: no view of it is an output, is kept for a backward or is
handed to Python code (an opaque call, a `.grad =`). Each takes the lowest offset free
while it lives (first fit, in step order, 64-byte aligned as Numba kernels want it), so
arrays that never live at the same time share space. `Layout` is that assignment;
`Block` is memory of at least its size with the views at its offsets, made once.

Blocks are shared by the plans of one compiled function (`Blocks`): its forward's and
its backward's plans run one after the other, and so hold the larger of their layouts
between steps, not both. A replay takes a free block and gives it back when it ends; a
replay that finds none free (another thread replaying, or a replay inside a replay)
makes another.
"""
from __future__ import annotations

import math
import threading
import weakref

import numpy as np

from minigrad.compile.schedule import handed_to_python, slots_in, step_outputs, step_reads
from minigrad.compile.steps import Fused, Unit
from minigrad.kernels.dispatch import ALIGNMENT, aligned_empty
from minigrad.kernels.matmul import matmul_twin
from minigrad.ops.linear import Addmm as Linear
from minigrad.ops.matmul import MatMul

# bytes a layout may span: the block is held between replays, all of it through the peak
# of the step, where eager holds only the arrays alive then. The steps of small models,
# where faults are a large share, fit or nearly (toy_translate's forward: 32 arrays in
# 1.6 MiB; its backward: 62 of 64 in 3.3 MiB); the paper's base model keeps a few of its
# arrays there, and its compiled step's resident set stays as it was (743 MiB against
# eager's 732, 742 against 730 without buffers).
MAX_BLOCK = 4 * 2**20
# bytes an array must have to be given a buffer: the C allocator serves smaller ones from
# memory it keeps, and a replay of small arrays only would pay for taking a block (about
# a microsecond) for nothing
MIN_BYTES = 64 * 2**10


def matmul_into(out, a, b):
    """MatMul's forward on the CPU (kernels.matmul), into `out`."""
    return matmul_twin(a, b, out=out)


def linear_into(out, x, weight, bias=None):
    """linear's Addmm forward, y = x W^T + b, into `out`: the same product and the same
    in-place bias add."""
    matmul_twin(x, weight.T, out=out)
    if bias is not None:
        out += bias
    return out


# an op whose forward a replay can run into a buffer: the function that does it
INTO = {MatMul: matmul_into, Linear: linear_into}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class Layout:
    """Where each buffered slot's array lies in a block: `slots[i]` is in buffer i, of
    `shapes[i]` and `dtypes[i]`, at byte `offsets[i]`; `size` bytes in all."""

    def __init__(self):
        self.slots: list[int] = []
        self.shapes: list[tuple] = []
        self.dtypes: list[np.dtype] = []
        self.offsets: list[int] = []
        self.size = 0

    def __bool__(self) -> bool:
        """Whether any array has a buffer."""
        return bool(self.slots)

    def index(self) -> dict[int, int]:
        """slot -> its buffer's index."""
        return {slot: index for index, slot in enumerate(self.slots)}

    def describe(self) -> str:
        size = (f"{self.size} bytes" if self.size < 2**14 else f"{self.size // 1024} KiB"
                if self.size < 2**24 else f"{self.size // 2**20} MiB")
        return (f"buffers: {len(self.slots)} arrays in a block of {size} kept between "
                f"replays: "
                + ", ".join(f"s{slot} at {offset}" for slot, offset
                            in zip(self.slots, self.offsets, strict=True)))


def plan_layout(steps: list, arrays: dict, slot_roots: dict, protected: set) -> Layout:
    """The buffers of a CPU plan's steps (see the module docstring). `arrays`: each
    slot's ArrayInfo; `slot_roots`: slot -> number of the memory it views; `protected`:
    the slots read after the plan (its outputs, what a backward keeps)."""
    first, last = _lifetimes(steps, slot_roots)
    escaped = {slot_roots.get(s) for s in protected} | handed_to_python(steps, slot_roots)
    layout = Layout()
    live: list[tuple[int, int, int]] = []  # (offset, size, index of the last use)
    for index, step in enumerate(steps):
        live = [interval for interval in live if interval[2] >= index]
        for slot in _results_into(step, arrays):
            root = slot_roots.get(slot)
            info = arrays.get(slot)
            if (root is None or root in escaped or first[root] != index or info is None
                    or not info.c_contiguous):
                continue
            nbytes = math.prod(info.shape) * info.dtype.itemsize
            if nbytes < MIN_BYTES:
                continue
            size = -(-nbytes // ALIGNMENT) * ALIGNMENT  # every buffer starts on a cache line
            offset = _first_fit(live, size)
            if offset + size > MAX_BLOCK:
                continue
            live.append((offset, size, last[root]))
            layout.slots.append(slot)
            layout.shapes.append(info.shape)
            layout.dtypes.append(info.dtype)
            layout.offsets.append(offset)
            layout.size = max(layout.size, offset + size)
    return layout


def _lifetimes(steps: list, slot_roots: dict) -> tuple[dict, dict]:
    """For each memory number, the index of the first and of the last step that reads or
    sets a slot viewing it."""
    first: dict = {}
    last: dict = {}
    for index, step in enumerate(steps):
        for slot in (*step_reads(step), *step_outputs(step)):
            root = slot_roots.get(slot)
            first.setdefault(root, index)
            last[root] = index
    return first, last


def _results_into(step, arrays: dict) -> list[int]:
    """The slots a step can write into given memory: a fused kernel's results, the
    product of a MatMul or linear forward on float32 or float64 NumPy matrices."""
    if isinstance(step, Fused):
        return list(slots_in(step.out)) if step.kernel is not None else []
    if isinstance(step, Unit) and step.cls in INTO and not step.saved and not step.attributes:
        operands = [arrays.get(s) for s in step.reads]
        result = arrays.get(step.out)
        if (result is not None and result.dtype in _FLOATS
                and all(o is not None and o.array_type is np.ndarray
                        and o.dtype == result.dtype for o in operands)
                and all(o.ndim >= 2 for o in operands[:2])):
            return [step.out]
    return []


def _first_fit(live: list, size: int) -> int:
    """The lowest offset where `size` bytes overlap no live interval."""
    offset = 0
    for start, length, _ in sorted(live):
        if offset + size <= start:
            break
        offset = max(offset, start + length)
    return offset


class Block:
    """Memory for layouts of up to `size` bytes, 64-byte aligned, and the views of it
    each layout's replay writes into, made on its first use."""

    def __init__(self, size: int):
        self.memory = aligned_empty((size,), np.uint8)
        self.size = size
        self._views: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def views(self, layout: Layout) -> list[np.ndarray]:
        views = self._views.get(layout)
        if views is None:
            views = [self.memory[offset:offset + math.prod(shape) * dtype.itemsize]
                     .view(dtype).reshape(shape)
                     for shape, dtype, offset in zip(layout.shapes, layout.dtypes,
                                                     layout.offsets, strict=True)]
            self._views[layout] = views
        return views


class Blocks:
    """The free blocks of the plans of one compiled function."""

    def __init__(self):
        self._free: list[Block] = []
        self._lock = threading.Lock()

    def take(self, size: int) -> Block:
        """A free block of at least `size` bytes: the last one given back, replaced by a
        new one where it is smaller."""
        with self._lock:
            block = self._free.pop() if self._free else None
        return block if block is not None and block.size >= size else Block(size)

    def __deepcopy__(self, memo) -> Blocks:
        """A copy of a compiled module has blocks of its own, none free yet."""
        return Blocks()

    def give_back(self, block: Block) -> None:
        with self._lock:
            self._free.append(block)

    def held(self) -> int:
        """The bytes of the free blocks."""
        with self._lock:
            return sum(block.size for block in self._free)
