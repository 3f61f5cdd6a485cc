"""AttributeErrors that help: when code written for PyTorch reaches for a name minigrad
lacks, the error says what minigrad has instead.

`mg.X` and `F.X` (minigrad.nn.functional) consult the tables below from a module
`__getattr__`, which Python calls only after ordinary lookup has failed; a name in no
table gets the closest existing names, if any are close. `tensor.X` works differently, see
tensor_hints(): Tensor has no `__getattr__`, whose mere presence would slow every
attribute read of every tensor.
"""
from __future__ import annotations

import difflib

# mg.X -> what to use instead
MODULE_NEAR = {
    "as_tensor": "mg.tensor(data) (a copy) or mg.from_numpy(array) (shares its memory)",
    "asarray": "mg.tensor(data) (a copy) or mg.from_numpy(array) (shares its memory)",
    "bernoulli": "mg.rand(*p.shape) < p",
    "broadcast_to": "Tensor.expand(*shape)",
    "default_generator": "mg.manual_seed and mg.get_rng_state, or an mg.Generator()",
    "hstack": "mg.cat(tensors, dim=1) (dim=0 for vectors)",
    "is_tensor": "isinstance(x, mg.Tensor)",
    "moveaxis": "mg.permute(x, dims)",
    "movedim": "mg.permute(x, dims)",
    "normal": "mg.randn(*shape) * std + mean",
    "numel": "x.numel()",
    "set_default_dtype": "dtype= on the creation functions (mg.float32 is the default float)",
    "tensordot": "mg.einsum",
    "uint16": "mg.int32 (uint8 is minigrad's one unsigned dtype)",
    "uint32": "mg.int64 (uint8 is minigrad's one unsigned dtype)",
    "uint64": "mg.int64 (uint8 is minigrad's one unsigned dtype)",
    "vstack": "mg.cat(tensors, dim=0) (mg.stack for vectors)",
}

# F.X -> what to use instead
FUNCTIONAL_NEAR = {
    "hardtanh": "x.clamp(min_val, max_val)",
    "interpolate": "x.repeat_interleave(factor, dim) for nearest upsampling by an integer "
                   "factor",
    "relu6": "x.clamp(0, 6)",
    "softmin": "F.softmax(-x, dim)",
    "threshold": "mg.where(x > threshold, x, value)",
}

# tensor.X -> what to use instead
TENSOR_NEAR = {
    "bfloat16": "x.half() or x.float() (minigrad has no bfloat16)",
    "broadcast_to": "x.expand(*shape)",
    "element_size": "x.dtype.itemsize",
    "movedim": "x.permute(*dims)",
    "mT": "x.transpose(-2, -1)",
    "ndimension": "x.dim() or x.ndim",
    "nelement": "x.numel()",
    "new_empty": "mg.zeros(*shape, dtype=x.dtype, device=x.device)",
    "new_full": "mg.full(shape, value, dtype=x.dtype, device=x.device)",
    "new_ones": "mg.ones(*shape, dtype=x.dtype, device=x.device)",
    "new_tensor": "mg.tensor(data, dtype=x.dtype, device=x.device)",
    "new_zeros": "mg.zeros(*shape, dtype=x.dtype, device=x.device)",
    "stride": "x.array.strides (in bytes, from NumPy or CuPy)",
}


# in-place forms PyTorch's Tensor has and minigrad's lacks
MISSING_INPLACE = (
    "abs_", "clip_", "cos_", "cumsum_", "erf_", "exp_", "floor_divide_", "log_", "neg_",
    "pow_", "relu_", "rsqrt_", "sigmoid_", "sin_", "sqrt_", "square_", "squeeze_", "tanh_",
    "transpose_", "unsqueeze_",
)


def missing_attribute(owner: str, name: str, near: dict, existing) -> AttributeError:
    """The AttributeError for `owner.name` (a module's): what to use instead when `near`
    knows, else the closest of the `existing` names. Private names get the plain error."""
    message = f"{owner} has no attribute {name!r}"
    if name.startswith("_"):
        return AttributeError(message, name=name)
    if name in near:
        message += f"; minigrad has {near[name]} instead"
    else:
        close = difflib.get_close_matches(name, [n for n in existing if not n.startswith("_")],
                                          n=3, cutoff=0.75)
        if close:
            message += f"; did you mean {' or '.join(repr(c) for c in close)}?"
    return AttributeError(message, name=name)


def tensor_hints(defined) -> dict:
    """{name: property} for Tensor's class body: reading one of the names of TENSOR_NEAR
    or MISSING_INPLACE that the class has not `defined` raises an AttributeError that says
    what to use instead (hasattr() is False, as for any missing name).

    Properties, not a __getattr__: in CPython a class with __getattr__ takes every
    attribute read of its instances off the interpreter's specialised path, which slows
    every op; a property costs only when read. Other misspelt names get Python's own "Did
    you mean" in the traceback."""
    hints = {name: f"minigrad has {instead} instead" for name, instead in TENSOR_NEAR.items()}
    for name in MISSING_INPLACE:
        out_of_place = name[:-1]
        hints[name] = (f"minigrad has no in-place {name}: use x = x.{out_of_place}(...), or "
                       f"x.copy_(x.{out_of_place}(...)) to write into x")
    return {name: _raising_property(name, hint) for name, hint in hints.items()
            if name not in defined}


def _raising_property(name: str, hint: str) -> property:
    def read(self):
        raise AttributeError(f"'Tensor' object has no attribute {name!r}; {hint}", name=name)

    return property(read, doc=hint)
