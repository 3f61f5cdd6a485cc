"""mg.autocast: mixed precision regions, as torch.autocast.

    with mg.autocast("cuda"):        # or "gpu"; "cpu" for CPU tensors
        loss = loss_fn(model(x), y)  # matrix products in float16, softmax and losses in float32
    scaler.scale(loss).backward()    # outside the region, as PyTorch recommends

Inside a region, each op on PyTorch's CUDA lists (op_lists.py) casts its floating inputs on
the region's device type as its list says (cast_policy.py); the casts are ops like any
other, so backward runs each op in the dtype its forward ran in and hands every parameter
a gradient of its own dtype. Ops on no list, tensors on other devices, float64 and integer
tensors are left as they are.

minigrad has one lower-precision float, float16 (NumPy and CuPy have no bfloat16), so it
is the default dtype on both devices, where PyTorch's CPU default is bfloat16; bfloat16 is
refused. PyTorch's CPU op lists are made for bfloat16, whose range is float32's; minigrad's
CPU regions use the CUDA lists, which keep the ops that overflow float16 (exp, sum,
softmax, norms, losses) in float32, and give the numbers a GPU region gives.

The state belongs to a thread, as grad mode does: a new thread starts outside any region.
A region can be nested in another (inner settings win until it ends) and turned off with
enabled=False; float16 copies of parameters are made once per outermost region and reused
(cache_enabled, as in PyTorch).
"""
from __future__ import annotations

import functools
import threading
import warnings

from minigrad import dtypes
from minigrad.backend.device import is_cuda_available

# device type names autocast takes, and the device type they mean
DEVICE_TYPES = {"cpu": "cpu", "cuda": "cuda", "gpu": "cuda"}


class _ThreadAutocast(threading.local):
    """Each thread's autocast state; a thread gets a fresh one on first use."""

    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": dtypes.float16, "cuda": dtypes.float16}
        self.cache_enabled = True
        self.nesting = 0  # open regions, enabled or not: the cache is dropped at 0
        self.cache: dict[int, tuple] = {}  # id(parameter) -> (parameter, its float16 copy)
        # the device types whose listed ops cast now: the enabled ones, except while a
        # listed op runs (its insides are not cast again, as in PyTorch)
        self.casting: tuple[str, ...] = ()

    def refresh_casting(self) -> None:
        self.casting = tuple(device for device, on in self.enabled.items() if on)


STATE = _ThreadAutocast()


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast takes this device type ("cpu", "cuda" or "gpu")."""
    return device_type in DEVICE_TYPES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether this thread is inside an enabled region for device_type (CUDA for None, as
    in PyTorch)."""
    return STATE.enabled[canonical_device_type(device_type or "cuda", "is_autocast_enabled")]


def get_autocast_dtype(device_type: str) -> dtypes.dtype:
    """The dtype lower-precision ops run in on device_type: mg.float16 unless a region
    set another."""
    return STATE.dtype[canonical_device_type(device_type, "get_autocast_dtype")]


def is_autocast_cache_enabled() -> bool:
    """Whether regions reuse the float16 copies of parameters (see autocast)."""
    return STATE.cache_enabled


def clear_autocast_cache() -> None:
    """Drop the float16 copies of parameters made so far (leaving the outermost region
    does this)."""
    STATE.cache.clear()


def canonical_device_type(device_type: str, caller: str) -> str:
    """"cpu" or "cuda" for a device type autocast takes; an error naming `caller` else."""
    if not isinstance(device_type, str):
        raise ValueError(f"{caller}: expected `device_type` of type `str`, got: "
                         f"`{type(device_type)}`")
    if device_type not in DEVICE_TYPES:
        raise RuntimeError(f"{caller}: unsupported autocast device_type {device_type!r}; "
                           f"expected one of {', '.join(map(repr, DEVICE_TYPES))}")
    return DEVICE_TYPES[device_type]


class autocast:  # noqa: N801  (torch's name)
    """Run the ops inside in mixed precision: `with mg.autocast("cuda"):` or
    `@mg.autocast("cuda")` on a function.

    Args:
        device_type: "cuda" (or "gpu") or "cpu": only tensors on that device type are cast.
        dtype: the lower-precision dtype; None for get_autocast_dtype(device_type)
            (float16). bfloat16 raises (minigrad has none); another dtype warns and turns
            the region off, as PyTorch does.
        enabled: False makes a region where this device type's ops are not cast (also
            inside an enabled one).
        cache_enabled: reuse each parameter's float16 copy within the outermost region;
            None keeps the current setting (on by default).

    "cuda" on a machine without CUDA warns and turns the region off, as in PyTorch.
    """

    def __init__(self, device_type: str, dtype: dtypes.dtype | None = None,
                 enabled: bool = True, cache_enabled: bool | None = None):
        self.device = canonical_device_type(device_type, "autocast")
        self.fast_dtype = (get_autocast_dtype(self.device) if dtype is None
                           else dtypes.as_dtype(dtype))
        if self.fast_dtype is dtypes.bfloat16:
            raise RuntimeError(f"autocast: minigrad has no bfloat16 (NumPy and CuPy lack its "
                               f"arithmetic); use dtype=mg.float16 for {self.device} autocast")
        self._cache_enabled = (is_autocast_cache_enabled() if cache_enabled is None
                               else bool(cache_enabled))
        self._enabled = bool(enabled) and self._usable()
        self._saved: list[tuple] = []

    def _usable(self) -> bool:
        """Whether an enabled region can cast; if not, say why in a warning."""
        name = self.device.upper()
        if self.fast_dtype is not dtypes.float16:
            warnings.warn(f"In {name} autocast, but the target dtype {self.fast_dtype} is not "
                          f"supported. Disabling autocast.\n{name} Autocast only supports "
                          "dtype minigrad.float16 currently.", stacklevel=3)
            return False
        if self.device == "cuda" and not is_cuda_available():
            warnings.warn("CUDA is not available. Disabling autocast.", stacklevel=3)
            return False
        return True

    def _enter(self) -> tuple:
        """Switch this thread's state to the region's; returns what to restore."""
        state = STATE
        previous = (state.enabled[self.device], state.dtype[self.device], state.cache_enabled)
        state.enabled[self.device] = self._enabled
        state.dtype[self.device] = self.fast_dtype
        state.cache_enabled = self._cache_enabled
        state.nesting += 1
        state.refresh_casting()
        return previous

    def _exit(self, previous: tuple) -> None:
        state = STATE
        state.nesting -= 1
        if state.nesting == 0:  # leaving the outermost region: its parameter copies go
            state.cache.clear()
        state.enabled[self.device], state.dtype[self.device], state.cache_enabled = previous
        state.refresh_casting()

    def __enter__(self) -> autocast:
        self._saved.append(self._enter())
        return self

    def __exit__(self, *exc_info) -> bool:
        self._exit(self._saved.pop())
        return False

    def __call__(self, function):
        """Decorate `function` to run inside this region on every call (each call keeps
        what it restores to itself, so recursion and threads are safe)."""
        if not callable(function):
            raise TypeError(f"autocast()(func) requires a callable, but got "
                            f"{type(function).__name__}. Did you mean to use autocast as a "
                            f"context manager? For example:\n    with mg.autocast("
                            f"device_type=...):\n        output = model(input)")

        @functools.wraps(function)
        def in_region(*args, **kwargs):
            previous = self._enter()
            try:
                return function(*args, **kwargs)
            finally:
                self._exit(previous)

        return in_region

    def __repr__(self) -> str:
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled}, cache_enabled={self._cache_enabled})")
