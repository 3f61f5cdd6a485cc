"""mg.cuda.amp and mg.cpu.amp: PyTorch's older per-device spellings of autocast and
GradScaler, with the device type fixed (torch.cuda.amp.autocast(), torch.cpu.amp.GradScaler()
...). They are the classes of mg.amp with one argument fewer."""
from __future__ import annotations

from types import SimpleNamespace

from minigrad import dtypes
from minigrad.amp.autocast_mode import autocast
from minigrad.amp.grad_scaler import GradScaler


class CudaAutocast(autocast):
    """mg.cuda.amp.autocast(): mg.autocast("cuda", ...)."""

    def __init__(self, enabled: bool = True, dtype: dtypes.dtype = dtypes.float16,
                 cache_enabled: bool = True):
        super().__init__("cuda", dtype, enabled, cache_enabled)


class CpuAutocast(autocast):
    """mg.cpu.amp.autocast(): mg.autocast("cpu", ...), float16 by default (minigrad has no
    bfloat16, PyTorch's CPU default)."""

    def __init__(self, enabled: bool = True, dtype: dtypes.dtype = dtypes.float16,
                 cache_enabled: bool = True):
        super().__init__("cpu", dtype, enabled, cache_enabled)


class CudaGradScaler(GradScaler):
    """mg.cuda.amp.GradScaler(): mg.amp.GradScaler("cuda", ...)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


class CpuGradScaler(GradScaler):
    """mg.cpu.amp.GradScaler(): mg.amp.GradScaler("cpu", ...)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


cuda_amp = SimpleNamespace(autocast=CudaAutocast, GradScaler=CudaGradScaler)
cpu_amp = SimpleNamespace(autocast=CpuAutocast, GradScaler=CpuGradScaler)
