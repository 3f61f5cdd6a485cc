"""minigrad.amp: automatic mixed precision, as torch.amp.

`mg.autocast(device_type)` runs the ops inside in float16 or float32 as PyTorch's op lists
say (autocast_mode.py, op_lists.py, cast_policy.py); `mg.amp.GradScaler` scales the loss so
that small float16 gradients survive, and skips steps whose gradients overflowed
(grad_scaler.py).
"""
from minigrad.amp.autocast_mode import (
    autocast,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_enabled,
)
from minigrad.amp.grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "clear_autocast_cache", "get_autocast_dtype",
           "is_autocast_available", "is_autocast_cache_enabled", "is_autocast_enabled"]
