"""mg.amp.GradScaler: dynamic loss scaling, as torch.amp.GradScaler.

float16 gradients below 2^-24 round to zero. Scaling the loss by S before backward scales
every gradient by S, lifting small ones into float16's range; the optimizer must then see
the gradients divided by S again, and a step whose gradients overflowed must be skipped:

    scaler = mg.amp.GradScaler("cuda")
    for x, y in batches:
        optimizer.zero_grad()
        with mg.autocast("cuda"):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()   # gradients of S * loss
        scaler.step(optimizer)          # unscale_: g / S; skipped if any g is inf or NaN
        scaler.update()                 # S * backoff_factor after a skipped step,
                                        # S * growth_factor after growth_interval clean ones

The scale is kept on the host as a float32 value (PyTorch keeps a float32 tensor), so the
numbers are PyTorch's: gradients are multiplied by float32(1 / S) in their own dtype, and S
is updated in float32. Deciding whether to skip reads one flag from the device per step.
"""
from __future__ import annotations

import enum
import math
import warnings

import numpy as np

from minigrad.amp.autocast_mode import canonical_device_type
from minigrad.autograd.grad_mode import no_grad
from minigrad.backend.device import is_cuda_available
from minigrad.tensor_base import TensorBase

_STATE_KEYS = ("scale", "growth_factor", "backoff_factor", "growth_interval",
               "_growth_tracker")
_NOT_SCALED = ("This may indicate your script did not use scaler.scale(loss or outputs) "
               "earlier in the iteration.")


class OptState(enum.Enum):
    """Where an optimizer is in the current iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


class _OptimizerState:
    def __init__(self):
        self.stage = OptState.READY
        self.found_inf: bool | None = None  # None until unscale_ has seen a gradient


class GradScaler:
    """Scale the loss, unscale the gradients, skip steps whose gradients overflowed, and
    adapt the scale (see the module docstring).

    Args:
        device: "cuda" (or "gpu") or "cpu". "cuda" without CUDA warns and disables the
            scaler, as in PyTorch.
        init_scale: the first scale, S.
        growth_factor: S is multiplied by it after growth_interval steps in a row without
            inf or NaN gradients (> 1).
        backoff_factor: S is multiplied by it after a step with inf or NaN gradients (< 1).
        growth_interval: how many clean steps in a row make S grow.
        enabled: False makes every method a pass-through (scale returns its argument, step
            calls optimizer.step()), so one training loop serves with and without scaling.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = canonical_device_type(device, "GradScaler")
        self._enabled = bool(enabled)
        if self._enabled and self._device == "cuda" and not is_cuda_available():
            warnings.warn("GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if not self._enabled:
            return
        if growth_factor <= 1.0:
            raise AssertionError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise AssertionError("The backoff factor must be < 1.0.")
        _check_state(init_scale, growth_factor, backoff_factor, growth_interval, 0,
                     "GradScaler", scale_name="init_scale")
        self._init_scale = init_scale
        self._scale: float | None = None  # float32, set by the first scale()
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._per_optimizer_states: dict[int, _OptimizerState] = {}

    def scale(self, outputs):
        """outputs * S: a tensor, or the tensors in a list or tuple (or any iterable, as a
        lazy map), scaled alike. Unchanged when disabled."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = _float32(self._init_scale)
        return self._scaled(outputs)

    def _scaled(self, value):
        if isinstance(value, TensorBase):
            return value * self._scale
        if isinstance(value, (list, tuple)):
            return type(value)(self._scaled(item) for item in value)
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return map(self._scaled, value)

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of optimizer's parameters by S, in place, and note whether
        any is inf or NaN. Call it once per step, after backward and before step(), to
        work on the true gradients (e.g. to clip them); step() calls it otherwise."""
        if not self._enabled:
            return
        self._check_scaled("unscale_")
        state = self._optimizer_state(optimizer)
        if state.stage is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state.stage is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, as PyTorch takes it, then rounded to float32
        inv_scale = _float32(1.0 / self._scale)
        state.found_inf = _unscale_grads(optimizer, inv_scale)
        state.stage = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) on the unscaled gradients, unless one of them is
        inf or NaN (then nothing is changed and None is returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scaled("step")
        state = self._optimizer_state(optimizer)
        if state.stage is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state.stage is OptState.READY:
            self.unscale_(optimizer)
        if state.found_inf is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None if state.found_inf else optimizer.step(*args, **kwargs)
        state.stage = OptState.STEPPED
        return result

    def update(self, new_scale: float | TensorBase | None = None) -> None:
        """End the iteration: set S to new_scale if given, else back it off if any
        optimizer's gradients held inf or NaN this iteration, or grow it after
        growth_interval clean iterations in a row."""
        if not self._enabled:
            return
        self._check_scaled("update")
        if new_scale is not None:
            self._scale = _float32(self._checked_new_scale(new_scale))
        else:
            found = [state.found_inf for state in self._per_optimizer_states.values()
                     if state.found_inf is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(any(found))
        self._per_optimizer_states = {}

    def _update_scale(self, found_inf: bool) -> None:
        """PyTorch's _amp_update_scale_, in float32."""
        if found_inf:
            self._scale = _float32(self._scale * self._backoff_factor)
            self._growth_tracker = 0
            return
        successful = self._growth_tracker + 1
        if successful == self._growth_interval:
            grown = _float32(self._scale * self._growth_factor)
            if math.isfinite(grown):
                self._scale = grown
            successful = 0
        self._growth_tracker = successful

    def _checked_new_scale(self, new_scale) -> float:
        if isinstance(new_scale, float):
            return new_scale
        reason = ("new_scale should be a float or a 1-element float tensor on the scaler's "
                  f"device ({self._device}) with requires_grad=False.")
        if (not isinstance(new_scale, TensorBase) or new_scale.device.type != self._device
                or new_scale.numel() != 1 or new_scale.requires_grad):
            raise AssertionError(reason)
        return float(new_scale.item())

    def _check_scaled(self, caller: str) -> None:
        if self._scale is None:
            raise AssertionError(f"Attempted {caller} but _scale is None.  {_NOT_SCALED}")

    def _optimizer_state(self, optimizer) -> _OptimizerState:
        return self._per_optimizer_states.setdefault(id(optimizer), _OptimizerState())

    def get_scale(self) -> float:
        """S (init_scale before the first scale()); 1.0 when disabled."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        return self._growth_tracker if self._enabled else 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """PyTorch's five entries (scale, growth_factor, backoff_factor, growth_interval,
        _growth_tracker) as Python numbers; empty when disabled. Take it after update()."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        """Continue from state_dict() of another scaler (nothing happens when disabled).
        ValueError for a dict that state_dict() cannot have made."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was "
                               "saved from a disabled instance of GradScaler.")
        if sorted(state_dict) != sorted(_STATE_KEYS):
            raise ValueError(f"GradScaler.load_state_dict: expected the entries "
                             f"{list(_STATE_KEYS)}, got {sorted(map(str, state_dict))}")
        values = [state_dict[key] for key in _STATE_KEYS]
        _check_state(*values, "GradScaler.load_state_dict")
        scale, self._growth_factor, self._backoff_factor, self._growth_interval, \
            self._growth_tracker = values
        self._init_scale = scale
        if self._scale is not None:
            self._scale = _float32(scale)


def _unscale_grads(optimizer, inv_scale: float) -> bool | None:
    """Multiply every gradient by inv_scale in place; whether any holds inf or NaN (one
    read from the device for all of them), None if there was no gradient."""
    nonfinite = None
    with no_grad():
        for group in optimizer.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if grad.dtype.name == "float16":
                    raise ValueError("Attempting to unscale FP16 gradients.")
                grad.mul_(inv_scale)
                bad = grad.isfinite().all().logical_not()
                nonfinite = bad if nonfinite is None else nonfinite.logical_or(bad)
    return None if nonfinite is None else bool(nonfinite.item())


def _float32(value: float) -> float:
    return float(np.float32(value))


def _check_state(scale, growth_factor, backoff_factor, growth_interval, growth_tracker,
                 where: str, scale_name: str = "scale") -> None:
    """ValueError naming the first value a scaler cannot hold."""
    rules = ((scale_name, scale, _is_number(scale) and 0 < scale < math.inf,
              "a finite number > 0"),
             ("growth_factor", growth_factor,
              _is_number(growth_factor) and 1 < growth_factor < math.inf,
              "a finite number > 1"),
             ("backoff_factor", backoff_factor,
              _is_number(backoff_factor) and 0 < backoff_factor < 1, "a number in (0, 1)"),
             ("growth_interval", growth_interval,
              _is_int(growth_interval) and growth_interval >= 1, "an integer >= 1"))
    for name, value, holds, expected in rules:
        if not holds:
            raise ValueError(f"{where}: {name} must be {expected}, got {value!r}")
    if not (_is_int(growth_tracker) and 0 <= growth_tracker < growth_interval):
        raise ValueError(f"{where}: _growth_tracker must be an integer in [0, "
                         f"growth_interval = {growth_interval}), got {growth_tracker!r}")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
