"""TensorBase: what the autograd core needs of a tensor.

A tensor is a backend array (`array`), the graph node that made it (`grad_fn`, None for a
leaf), its gradient (`grad`) and a version counter that in-place ops bump. The class users
meet, `minigrad.tensor.Tensor`, adds the math on top of this base: its operators and
methods call the ops in `minigrad.ops` and the backward engine.

Why two classes: Tensor's methods call the ops, so tensor.py imports the ops; the ops, the
Function machinery and the engine therefore cannot import tensor.py back (imports run one
way). They recognise a tensor by this base class, and they make a new tensor through one
they already hold: `like._wrap(array, grad_fn)` (every tensor is a Tensor, and `_wrap` is
Tensor's constructor for op outputs).
"""
from __future__ import annotations

from minigrad import dtypes
from minigrad.backend import array_module, device_of
from minigrad.size import Size

_DTYPE_OF_NUMPY = {d.np: d for d in dtypes.ALL}


class TensorBase:
    """An array, its creator node, its gradient and its version; see the module docstring.

    Attributes:
        array: the backend array (numpy.ndarray on "cpu", cupy.ndarray on "cuda").
        data: as in PyTorch, a tensor sharing this tensor's memory, outside the graph
            (see TensorBase.data).
        grad_fn: the Function node whose output this is; None for a leaf.
        grad: the accumulated gradient (a tensor), for leaves that require grad.
        _version: a one-element list shared with every view of the same memory; in-place
            ops add 1, so a backward that saved the old values can tell.
    """

    __slots__ = ("array", "grad_fn", "_requires_grad", "_version", "__weakref__", "__dict__")
    # set on few tensors: as class attributes, a new tensor need not write them
    grad = None
    _hooks = None
    _post_accumulate_hooks = None
    _accumulator = None  # a weak reference to the leaf's AccumulateGrad node, once made

    # make NumPy defer to our reflected operators (ndarray * Tensor -> Tensor.__rmul__)
    __array_priority__ = 1000

    @property
    def shape(self) -> Size:
        return Size(self.array.shape)

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def dtype(self) -> dtypes.dtype:
        found = _DTYPE_OF_NUMPY.get(self.array.dtype)
        return found if found is not None else dtypes.from_numpy(self.array.dtype)

    @property
    def device(self):
        return device_of(self.array)

    @property
    def xp(self):
        """The array module of this tensor's data (numpy or cupy)."""
        return array_module(self.array)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True):
        """Make this leaf record (or stop recording) the ops applied to it."""
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"requires_grad_: only tensors of floating point dtype can require "
                f"gradients, got {self.dtype} of shape {tuple(self.shape)}"
            )
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError(
                "requires_grad_(False) on a non-leaf tensor; use .detach() instead"
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def data(self):
        """PyTorch's `.data`: a tensor sharing this one's memory, cut from the graph, whose
        in-place changes autograd does not track (it has a version counter of its own, so
        `p.data.add_(...)` in an optimizer does not invalidate a saved `p`). Use
        `.detach()` for a view that autograd checks, `.array` for the backend array."""
        return self._wrap(self.array)

    @data.setter
    def data(self, value) -> None:
        """`t.data = other` makes t use other's memory (and shape and dtype), as PyTorch
        allows; t stays the same tensor object, in the same place in any graph."""
        if not isinstance(value, TensorBase):
            raise TypeError(f"Tensor.data must be set to a tensor, got {type(value).__name__}"
                            "; to wrap an array use mg.tensor or mg.from_numpy")
        self.array = value.array

    @staticmethod
    def _wrap(array, grad_fn=None, version=None):
        """A new tensor around `array` (no copy, no checks). Defined by Tensor."""
        raise NotImplementedError
