"""What a module's tensors hold and where they live: ModuleState, the part of Module
that saves and restores its parameters and persistent buffers (state_dict,
load_state_dict) and moves or casts them in place (to, cpu, cuda, float, double), with
PyTorch's names, keys and messages."""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Iterator

from minigrad import dtypes
from minigrad.autograd import no_grad
from minigrad.backend import to_device
from minigrad.tensor import Tensor
from minigrad.to_arguments import parse_to_arguments

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class ModuleState:
    """Module's state and device methods; `self` is a Module (its registries _parameters,
    _buffers, _non_persistent and _modules, and modules())."""

    def _local_state(self) -> Iterator:
        """This module's own persistent entries: parameters first, then buffers."""
        for name, param in self._parameters.items():
            if param is not None:
                yield name, param
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent:
                yield name, buffer

    def state_dict(self, destination: OrderedDict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Ordered {dotted name: tensor} of parameters and persistent buffers, module by
        module; the tensors share memory with the module but are detached."""
        destination = OrderedDict() if destination is None else destination
        for name, value in self._local_state():
            destination[prefix + name] = value if keep_vars else value.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Copy values from `state_dict` into this module's parameters and buffers, in
        place (their identity, dtype and device are kept). Raises RuntimeError naming
        every missing/unexpected key (when strict) and every shape mismatch."""
        own = self.state_dict(keep_vars=True)
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        errors = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            source_shape = tuple(getattr(state_dict[key], "shape", ()))
            if source_shape != tuple(target.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {source_shape} "
                    f"from checkpoint, the shape in current model is {tuple(target.shape)}"
                )
        if strict and missing:
            errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(map(repr, missing)))
        if strict and unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: "
                          + ", ".join(map(repr, unexpected)))
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        with no_grad():
            for key, target in own.items():
                if key in state_dict:
                    target.copy_(_array_like(state_dict[key], target))
        return IncompatibleKeys(missing, unexpected)

    def to(self, *args, **kwargs) -> ModuleState:
        """Move parameters and buffers to a device and/or cast floating ones to a floating
        dtype, in place: each Parameter stays the same object, only its `.data` changes.
        Takes Tensor.to's arguments (minigrad/to_arguments.py) but copy."""
        target = parse_to_arguments(args, kwargs, "Module.to")
        if target.copy:
            raise RuntimeError("Module.to: copy=True is not accepted: a module moves its "
                               "parameters in place (copy.deepcopy(module) copies it)")
        device, dtype = target.device, target.dtype
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"Module.to only accepts floating point dtypes, got {dtype}")
        for module in self.modules():
            for registry in (module._parameters, module._buffers):
                for value in registry.values():
                    if value is not None:
                        _move(value, device, dtype)
        return self

    def cpu(self) -> ModuleState:
        return self.to("cpu")

    def cuda(self) -> ModuleState:
        return self.to("cuda")

    gpu = cuda

    def float(self) -> ModuleState:
        return self.to(dtypes.float32)

    def double(self) -> ModuleState:
        return self.to(dtypes.float64)


def _array_like(value, target: Tensor):
    """`value` (tensor or array) as an array on target's device with target's dtype."""
    array = value.array if isinstance(value, Tensor) else value
    return to_device(array, target.device).astype(target.array.dtype, copy=False)


def _move(t: Tensor, device, dtype) -> None:
    """Replace t's array (and its grad's) by one on `device` / of `dtype`."""
    for holder in (t, t.grad):
        if holder is None:
            continue
        array = holder.array
        if device is not None:
            array = to_device(array, device)
        if dtype is not None and holder.dtype.is_floating_point:
            array = array.astype(dtype.np, copy=False)
        holder.array = array
