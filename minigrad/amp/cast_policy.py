"""How an op on autocast's lists casts its inputs: `@autocast_op(name)` on the function that
computes PyTorch's op `name` gives it the policy of the list in op_lists.py that names it.

Outside autocast regions the decorated function runs as written (the only cost is one look
at this thread's state). Inside one, its floating tensors on the region's device type,
float16 or float32 and also in a list or tuple argument, are cast as the policy says, and
the function runs with casting off, so the ops it calls on the cast inputs are not cast
again (PyTorch casts at the surface of an op, not inside it).
"""
from __future__ import annotations

import functools

import numpy as np

from minigrad import dtypes
from minigrad.amp.autocast_mode import STATE
from minigrad.amp.op_lists import BANNED, POLICIES
from minigrad.autograd.grad_mode import is_grad_enabled
from minigrad.tensor_base import TensorBase

_CASTABLE = (np.dtype(np.float16), np.dtype(np.float32))


def autocast_op(name: str):
    """Decorator: the function computes PyTorch's op `name`, which must be on one of the
    lists in op_lists.py; the wrapper's `autocast_policy` names the list's policy."""
    if name not in POLICIES:
        raise ValueError(f"autocast_op: {name!r} is on none of the lists in "
                         "minigrad/amp/op_lists.py")
    policy = POLICIES[name]

    def mark(function):
        cast_inputs = _policy_for(policy, name)

        @functools.wraps(function)
        def autocast_aware(*args, **kwargs):
            casting = STATE.casting
            if not casting:
                return function(*args, **kwargs)
            STATE.casting = ()
            try:
                args, kwargs = cast_inputs(args, kwargs, casting)
                return function(*args, **kwargs)
            finally:
                STATE.casting = casting

        autocast_aware.autocast_policy = policy
        return autocast_aware

    return mark


def _policy_for(policy: str, name: str):
    """cast_inputs(args, kwargs, casting) -> (args, kwargs) for the op's policy."""
    if policy == "lower_precision_fp":
        return functools.partial(_cast_all, to=_region_dtype)
    if policy == "fp32":
        return functools.partial(_cast_all, to=_float32)
    if policy == "fp32_set_opt_dtype":
        return _first_to_float32
    if policy == "promote":
        return _promote
    if policy == "native":
        return _as_given
    return functools.partial(_refuse, message=BANNED[name])


def _region_dtype(device: str) -> dtypes.dtype:
    return STATE.dtype[device]


def _float32(device: str) -> dtypes.dtype:
    return dtypes.float32


def _cast_all(args: tuple, kwargs: dict, casting: tuple, to) -> tuple[tuple, dict]:
    """lower_precision_fp and fp32: every castable input becomes to(its device type)."""
    return (tuple(_cast(value, to, casting) for value in args),
            {key: _cast(value, to, casting) for key, value in kwargs.items()})


def _first_to_float32(args: tuple, kwargs: dict, casting: tuple) -> tuple[tuple, dict]:
    """fp32_set_opt_dtype: run in float32, the first input cast. A dtype the caller passed
    is still applied by the op, after this cast, so it wins as in PyTorch."""
    if not args:
        return args, kwargs
    return (_cast(args[0], _float32, casting), *args[1:]), kwargs


def _promote(args: tuple, kwargs: dict, casting: tuple) -> tuple[tuple, dict]:
    """promote: every castable input becomes the widest of their dtypes."""
    inputs = [*args, *kwargs.values()]
    widest = (_float32 if any(_is_castable(value, casting, dtypes.float32)
                              for value in _flattened(inputs)) else _region_dtype)
    return _cast_all(args, kwargs, casting, widest)


def _as_given(args: tuple, kwargs: dict, casting: tuple) -> tuple[tuple, dict]:
    """native: nothing is cast (and the ops inside are not either)."""
    return args, kwargs


def _refuse(args: tuple, kwargs: dict, casting: tuple, message: str):
    raise RuntimeError(message)


def _cast(value, to, casting: tuple):
    """value with its castable tensors (itself, or in a list or tuple) cast to
    to(device type); what is not cast is returned as it is."""
    if isinstance(value, (list, tuple)):
        cast = [_cast(item, to, casting) for item in value]
        changed = any(new is not old for new, old in zip(cast, value, strict=True))
        return type(value)(cast) if changed else value
    if not _is_castable(value, casting):
        return value
    target = to(value.device.type)
    if value.dtype is target:
        return value
    if target is dtypes.float16:
        return _to_float16(value)
    return value.to(target)


def _is_castable(value, casting: tuple, dtype: dtypes.dtype | None = None) -> bool:
    """A float16 or float32 tensor (of `dtype` if given) on a device type of `casting`."""
    return (isinstance(value, TensorBase) and value.array.dtype in _CASTABLE
            and (dtype is None or value.dtype is dtype) and value.device.type in casting)


def _flattened(values):
    for value in values:
        if isinstance(value, (list, tuple)):
            yield from value
        else:
            yield value


def _to_float16(value: TensorBase) -> TensorBase:
    """value as float16; for a float32 leaf that requires grad (a parameter), the copy made
    the first time in this region (cache_enabled), so a weight used by several ops is cast
    once. Only while grad mode is on: a copy made under no_grad has no graph to reuse."""
    state = STATE
    if not (state.cache_enabled and value.requires_grad and value.grad_fn is None
            and value.dtype is dtypes.float32 and is_grad_enabled()):
        return value.to(dtypes.float16)
    entry = state.cache.get(id(value))
    if entry is None or entry[0] is not value:
        entry = state.cache[id(value)] = (value, value.to(dtypes.float16))
    return entry[1]
