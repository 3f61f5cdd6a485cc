"""`mg.cpu`: PyTorch's torch.cpu names that minigrad has: `mg.cpu.amp.autocast` and
`mg.cpu.amp.GradScaler`, the CPU's mixed precision (see minigrad/amp)."""
from minigrad.amp.device_amp import cpu_amp as amp

__all__ = ["amp"]
