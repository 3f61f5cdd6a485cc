"""Tensor: the class users meet. It holds a backend array, the Function node that made it
and its gradient (see TensorBase), and defines the math: every operator and method below
calls an op of `minigrad.ops`, so that `x.exp()` and `mg.exp(x)` are one code path, and
`backward()` calls the engine (minigrad/autograd/engine.py).

`.array` is the backend array (a numpy.ndarray on "cpu", a cupy.ndarray on "cuda");
`.data` is, as in PyTorch, a tensor sharing its memory outside the graph.
"""
from __future__ import annotations

import weakref

import numpy as np

from minigrad import dtypes, ops, suggest
from minigrad.autograd import engine, is_grad_enabled
from minigrad.backend import array_module, as_device, to_device
from minigrad.generator import source as random_source
from minigrad.ops.operands import normalize_dim
from minigrad.tensor_base import TensorBase
from minigrad.tensor_conversions import TensorConversions


class Tensor(TensorBase, TensorConversions):
    """A multi-dimensional array that records the ops applied to it when it requires grad.

    `mg.tensor(data)` is the usual way to make one; `Tensor(data, dtype, device,
    requires_grad)` does the same.
    """

    __slots__ = ()

    def __init__(self, data, dtype=None, device=None, requires_grad: bool = False):
        device = as_device(device) if device is not None else None
        self.array = _to_array(data, dtype, device)
        self.grad_fn = None
        self._version = [0]
        self._requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @staticmethod
    def _wrap(data, grad_fn=None, version=None) -> Tensor:
        """A tensor around an op's output array: no checks, no copy. `version` is the
        version counter to share (a view shares its base's)."""
        t = object.__new__(Tensor)
        t.array = data
        t.grad_fn = grad_fn
        t._requires_grad = grad_fn is not None
        t._version = [0] if version is None else version
        return t

    # ------------------------------------------------------------------ attributes
    @property
    def T(self) -> Tensor:  # noqa: N802
        """All dims reversed (a transpose of a matrix)."""
        if self.array.ndim == 2:
            return ops.transpose(self, 0, 1)
        return self.permute(*reversed(range(self.ndim)))

    def size(self, dim: int | None = None):
        """The shape (an mg.Size), or the size of one dim."""
        if dim is None:
            return self.shape
        return self.array.shape[normalize_dim(dim, self.ndim, "size")]

    def is_contiguous(self) -> bool:
        """Whether the elements lie in row-major order without gaps (see view())."""
        return bool(self.array.flags.c_contiguous)

    def numel(self) -> int:
        return int(self.array.size)

    def dim(self) -> int:
        return self.ndim

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __format__(self, spec: str) -> str:
        """f"{loss:.4f}" formats a 0-d tensor as its number; others take only "", as in torch."""
        if self.ndim == 0:
            return format(self.item(), spec)
        if not spec:
            return str(self)
        raise TypeError(
            f"unsupported format string {spec!r} passed to Tensor.__format__: only 0-d "
            f"tensors format as numbers, this one has shape {tuple(self.shape)}; use "
            ".item() or .tolist()"
        )

    def __dir__(self):
        return [name for name in super().__dir__() if name not in self._hints]

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", precision=4, prefix="tensor(")
        extras = ""
        if self.dtype not in (dtypes.float32, dtypes.int64, dtypes.bool_):
            extras += f", dtype={self.dtype}"
        if self.device.type != "cpu":
            extras += f", device='{self.device}'"
        if self.grad_fn is not None:
            extras += f", grad_fn=<{self.grad_fn.name}>"
        elif self._requires_grad:
            extras += ", requires_grad=True"
        return f"tensor({body}{extras})"

    # ------------------------------------------------------------------ autograd
    # x.backward(...) is the engine's backward(x, ...) itself (see its docstring)
    backward = engine.backward

    def detach(self) -> Tensor:
        """The same array, cut from the graph (shares memory and version counter)."""
        return Tensor._wrap(self.array, None, self._version)

    def retain_grad(self) -> None:
        """Keep `.grad` of a non-leaf tensor after backward."""
        if self.grad_fn is None:
            return
        self.grad_fn._retained_by = weakref.ref(self)

    def register_hook(self, hook):
        """Call `hook(grad)` when this tensor's gradient is computed; a non-None return
        replaces the gradient. Returns a handle with `.remove()`."""
        if not self._requires_grad:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that "
                               "does not require grad")
        owner = self.grad_fn if self.grad_fn is not None else self
        if owner._hooks is None:
            owner._hooks = []
        owner._hooks.append(hook)
        return _HookHandle(owner._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call `hook(tensor)` on a leaf right after backward has accumulated its `.grad`
        (as soon as every path into it is done, while the rest of backward goes on).
        Returns a handle with `.remove()`."""
        if self.grad_fn is not None:
            raise RuntimeError("register_post_accumulate_grad_hook: only leaf tensors "
                               "accumulate gradients; use register_hook on a non-leaf")
        if not self._requires_grad:
            raise RuntimeError("register_post_accumulate_grad_hook: cannot register a hook "
                               "on a tensor that does not require grad")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = []
        self._post_accumulate_hooks.append(hook)
        return _HookHandle(self._post_accumulate_hooks, hook)

    def t(self) -> Tensor:
        """The transpose of a matrix; a 0-d or 1-d tensor as it is (a view either way).
        More dims raise, as in PyTorch: use transpose(dim0, dim1) or .T."""
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, got shape "
                               f"{tuple(self.shape)}; use transpose(dim0, dim1) or .T")
        return self.T

    def t_(self) -> Tensor:
        """t() in place: this tensor becomes its transpose (a view of the same memory).
        Like the other in-place ops, refused for a tensor that requires grad while grad
        mode is on."""
        if self._requires_grad and is_grad_enabled():
            raise RuntimeError(f"t_: a tensor that requires grad (shape {tuple(self.shape)}) "
                               "cannot be changed in place while grad mode is on; use t() "
                               "or wrap the update in `with mg.no_grad():`")
        self.array = self.detach().t().array
        self._version[0] += 1
        return self

    # ------------------------------------------------------------------ arithmetic
    # An operator is the op function itself: `a + b` calls ops.add(a, b) directly.
    # Comparisons are elementwise, as in PyTorch, so a tensor hashes by identity.
    __add__ = ops.add
    __sub__ = ops.sub
    __mul__ = ops.mul
    __truediv__ = ops.div
    __pow__ = ops.pow
    __matmul__ = ops.matmul
    __floordiv__ = ops.floor_divide
    __eq__ = ops.eq
    __ne__ = ops.ne
    __lt__ = ops.lt
    __le__ = ops.le
    __gt__ = ops.gt
    __ge__ = ops.ge
    __and__ = ops.logical_and
    __or__ = ops.logical_or
    __neg__ = ops.neg
    __invert__ = ops.logical_not
    __getitem__ = ops.getitem
    __setitem__ = ops.setitem_

    # the reflected operators swap the operands
    def __radd__(self, other):
        return ops.add(other, self)

    def __rsub__(self, other):
        return ops.sub(other, self)

    def __rmul__(self, other):
        return ops.mul(other, self)

    def __rtruediv__(self, other):
        return ops.div(other, self)

    def __rpow__(self, other):
        return ops.pow(other, self)

    def __rmatmul__(self, other):
        return ops.matmul(other, self)

    def __rfloordiv__(self, other):
        return ops.floor_divide(other, self)

    __hash__ = object.__hash__

    # A method whose arguments are those of the op, self first, is the op function itself:
    # x.exp() is mg.exp(x), x.gather(1, i) is mg.gather(x, 1, i). The table of ops in
    # minigrad/ops/__init__.py marks about a hundred as methods; this line binds each of
    # them in the class body (tensor.pyi lists them for editors and type checkers). The
    # methods below it adapt their arguments.
    vars().update({name: ops.OPS[name][0] for name in ops.TENSOR_METHODS})

    def reshape(self, *shape):
        return ops.reshape(self, shape)

    def permute(self, *dims):
        return ops.permute(self, dims)

    def expand(self, *sizes):
        return ops.expand(self, sizes)

    def where(self, condition, other):
        """self where condition holds, other elsewhere: mg.where(condition, self, other)."""
        return ops.where(condition, self, other)

    # ------------------------------------------------------------------ in place
    # In-place ops never enter the graph; they bump the version counter, so a backward
    # that saved this tensor before the change raises instead of using stale values.
    def add_(self, other, alpha=1):
        return ops.inplace(self, "add", other if alpha == 1 else other * alpha)

    def sub_(self, other, alpha=1):
        return ops.inplace(self, "sub", other if alpha == 1 else other * alpha)

    def mul_(self, other):
        return ops.inplace(self, "mul", other)

    def div_(self, other):
        return ops.inplace(self, "div", other)

    def copy_(self, other):
        return ops.inplace(self, "copy", other)

    def fill_(self, value):
        return ops.inplace(self, "copy", value)

    def zero_(self):
        return ops.inplace(self, "copy", 0)

    def masked_fill_(self, mask, value):
        return ops.inplace(self, "masked_fill", value, mask=mask)

    def clamp_(self, min=None, max=None):  # noqa: A002
        return ops.inplace(self, "clamp", None, low=min, high=max)

    def uniform_(self, low: float = 0.0, high: float = 1.0, *, generator=None):
        draws = random_source(generator).uniform(self.array.shape, low, high, self.dtype,
                                                 self.device)
        return ops.inplace(self, "copy", draws)

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None):
        draws = random_source(generator).normal(self.array.shape, mean, std, self.dtype,
                                                self.device)
        return ops.inplace(self, "copy", draws)

    # names PyTorch's Tensor has and this one lacks read as AttributeErrors that say what
    # to use instead (see minigrad/suggest.py); __dir__ leaves them out
    _hints = suggest.tensor_hints(defined={**vars(TensorConversions), **vars()})
    vars().update(_hints)


def constant(array) -> Tensor:
    """A tensor around a backend array (NumPy or CuPy), sharing its memory, outside any
    graph: for code that computes on raw arrays and hands the result back as a tensor."""
    return Tensor._wrap(array)


class _HookHandle:
    def __init__(self, hooks: list, hook):
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _to_array(data, dtype, device):
    """Turn Python data, arrays or tensors into a backend array of the right dtype."""
    if isinstance(data, Tensor):
        data = data.array
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(data, (np.ndarray, np.generic)) or hasattr(data, "__cuda_array_interface__"):
        array = data
        if dtype is None:
            dtype = dtypes.from_numpy(array.dtype)
    else:
        array = np.asarray(data)
        if dtype is None:
            dtype = _infer_dtype(array)
    xp = array_module(array) if device is None else None
    if device is not None:
        array = to_device(array, device)
        xp = array_module(array)
    if array.dtype != dtype.np:
        array = array.astype(dtype.np)
    elif array is data:
        array = array.copy()
    return xp.ascontiguousarray(array) if array.ndim else xp.asarray(array)


def _infer_dtype(array: np.ndarray) -> dtypes.dtype:
    """Python floats become float32 and ints int64, like torch.tensor."""
    if array.dtype == np.bool_:
        return dtypes.bool_
    if array.dtype.kind in "iu":
        return dtypes.int64
    if array.dtype.kind == "f":
        return dtypes.float32
    raise TypeError(f"tensor(): cannot make a tensor from data of type {array.dtype}")
