"""Optimizer: the base class holding param_groups and per-parameter state, with
PyTorch's state_dict layout (parameters named by their index across all groups)."""
from __future__ import annotations

import copy
import math

from minigrad.autograd import enable_grad, no_grad
from minigrad.backend import to_device
from minigrad.nn.utils import zero_grads
from minigrad.tensor import Tensor, constant


class Optimizer:
    """Subclasses implement `_update(group)`, which updates every parameter of one group
    whose .grad is set; step() runs it for every group under no_grad."""

    def __init__(self, params, defaults: dict) -> None:
        self.defaults = defaults
        self.state: dict[Tensor, dict] = {}
        self.param_groups: list[dict] = []
        params = list(params) if not isinstance(params, Tensor) else [params]
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own hyperparameters (defaults fill the rest)."""
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for param in group["params"]:
            if not isinstance(param, Tensor) or not param.is_leaf:
                raise TypeError("optimizer can only optimize leaf tensors (e.g. Parameters), "
                                f"got {type(param).__name__}")
        known = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in known for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        self.param_groups.append(group)

    @no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure() if given."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            self._update(group)
        return loss

    def _update(self, group: dict) -> None:
        raise NotImplementedError

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            zero_grads(group["params"], set_to_none)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """{"state": {index: {name: tensor or number}}, "param_groups": [{..., "params":
        [indices]}]}; arrays in the state are shared, not copied (as in PyTorch)."""
        index_of = {}
        groups = []
        for group in self.param_groups:
            for param in group["params"]:
                index_of.setdefault(id(param), len(index_of))
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {
            index_of[id(param)]: {
                name: constant(value) if hasattr(value, "shape") else value
                for name, value in entries.items()
            }
            for param, entries in self.state.items()
            if id(param) in index_of
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyperparameters and state (copied, cast to each parameter's device).
        Raises ValueError, before changing anything, for a state dict that does not fit
        this optimizer: other groups or sizes, other hyperparameters or kinds of value,
        state for unknown parameters, or state entries of the wrong name or shape. The
        layout is PyTorch's: a torch optimizer's state dict, its tensors turned into NumPy
        arrays, loads into the same minigrad optimizer."""
        params_by_index = self._check_groups(state_dict)
        states = state_dict["state"]
        if not isinstance(states, dict):
            raise ValueError(f"loaded state dict's 'state' must be a dict, got "
                             f"{type(states).__name__}")
        checked = {}
        for index, entries in states.items():
            if index not in params_by_index:
                raise ValueError(f"loaded state dict has state for parameter {index!r}, which "
                                 "no parameter group holds")
            param, group = params_by_index[index]
            entries = _scalars_as_numbers(entries, self._state_kinds(group))
            self._check_state(index, entries, param, group)
            checked[index] = entries
        self.state = {}
        for index, entries in checked.items():
            param = params_by_index[index][0]
            self.state[param] = {name: _state_value(value, param)
                                 for name, value in entries.items()}
        for saved, group in zip(state_dict["param_groups"], self.param_groups, strict=True):
            for name, value in saved.items():
                if name != "params":
                    group[name] = copy.deepcopy(value)

    def _state_kinds(self, group: dict) -> dict[str, str] | None:
        """The entries of one parameter's state: {name: "array" (shaped like the
        parameter) or "count" (an int >= 0)}; None where any entries are allowed."""
        return None

    def _check_groups(self, state_dict) -> dict:
        """{saved index: (parameter, its group)} after checking the param_groups."""
        if not isinstance(state_dict, dict) or set(state_dict) != {"state", "param_groups"}:
            raise ValueError("loaded state dict must be a dict with the keys 'state' and "
                             f"'param_groups', got {str(state_dict)[:80]}")
        groups = state_dict["param_groups"]
        if not isinstance(groups, list) or len(groups) != len(self.param_groups):
            count = len(groups) if isinstance(groups, list) else type(groups).__name__
            raise ValueError(f"loaded state dict has {count} parameter groups, the "
                             f"optimizer has {len(self.param_groups)}")
        params_by_index = {}
        for number, (saved, group) in enumerate(zip(groups, self.param_groups, strict=True)):
            where = f"parameter group {number}"
            required = {"params", *self.defaults}
            if not isinstance(saved, dict) or not required <= set(saved):
                found = sorted(map(str, saved)) if isinstance(saved, dict) else saved
                raise ValueError(f"loaded state dict's {where} has the entries {found}, "
                                 f"expected at least {sorted(required)}")
            for name, value in saved.items():
                if name in group and name != "params":
                    check_same_kind(value, group[name], f"{where}'s {name!r}")
                elif name != "params" and not _is_plain(value):
                    # entries this optimizer lacks (a scheduler's initial_lr) are plain values
                    raise ValueError(f"loaded state dict's {where} has {name!r} = "
                                     f"{str(value)[:60]}; expected a number, bool, str or None")
            indices = saved["params"]
            if not isinstance(indices, list) or len(indices) != len(group["params"]):
                raise ValueError(
                    f"loaded state dict has a parameter group of {_length(indices)} "
                    f"parameters where the optimizer's group has {len(group['params'])}")
            for index, param in zip(indices, group["params"], strict=True):
                if type(index) is not int or index in params_by_index:
                    raise ValueError(f"loaded state dict's {where} lists parameter "
                                     f"{index!r}, which is not a new integer index")
                params_by_index[index] = (param, group)
        return params_by_index

    def _check_state(self, index, entries, param: Tensor, group: dict) -> None:
        where = f"loaded state of parameter {index}"
        kinds = self._state_kinds(group)
        if not isinstance(entries, dict) or (kinds is not None and set(entries) != set(kinds)):
            found = (sorted(map(str, entries)) if isinstance(entries, dict)
                     else type(entries).__name__)
            raise ValueError(f"{where} has the entries {found}, expected {sorted(kinds or [])}")
        for name, value in entries.items():
            kind = (kinds or {}).get(name, "array" if hasattr(value, "shape") else "number")
            if kind == "array":
                if not _is_float_array(value) or tuple(value.shape) != tuple(param.shape):
                    found = (f"{value.dtype} of shape {tuple(value.shape)}"
                             if hasattr(value, "shape") else repr(value))
                    raise ValueError(f"{where}: {name!r} must be a floating array of the "
                                     f"parameter's shape {tuple(param.shape)}, got {found}")
            elif kind == "count":
                if type(value) is not int or value < 0:
                    raise ValueError(f"{where}: {name!r} must be an int >= 0, got {value!r}")
            else:
                check_same_kind(value, 0.0, f"{where}'s {name!r}")

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for index, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {index}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def check_same_kind(saved, current, where: str) -> None:
    """ValueError unless `saved` is the same kind of value as `current`: a finite number
    for a number, a bool for a bool, a same-length tuple or list of such, an equal-typed
    string or None; for checking loaded hyperparameters and scheduler state."""
    if isinstance(current, bool) or current is None or isinstance(current, str):
        ok = type(saved) is type(current)
    elif isinstance(current, (int, float)):
        ok = (isinstance(saved, (int, float)) and not isinstance(saved, bool)
              and math.isfinite(saved))
    elif isinstance(current, (tuple, list)):
        ok = isinstance(saved, (tuple, list)) and len(saved) == len(current)
        if ok:
            for i, (item, reference) in enumerate(zip(saved, current, strict=True)):
                check_same_kind(item, reference, f"{where}[{i}]")
    else:
        ok = True  # an object the optimizer made: nothing to compare
    if not ok:
        raise ValueError(f"{where} must be like {current!r}, got {str(saved)[:60]}")


def _scalars_as_numbers(entries, kinds: dict[str, str] | None):
    """`entries` with each 0-d array or tensor in a "count" or "number" entry replaced by
    the Python number it holds (a whole count by an int): PyTorch keeps 'step' and NAdam's
    'mu_product' as 0-d tensors, which a state dict ported from PyTorch holds as arrays."""
    if not isinstance(entries, dict) or not kinds:
        return entries
    ported = dict(entries)
    for name, kind in kinds.items():
        value = entries.get(name)
        if kind != "array" and hasattr(value, "shape") and tuple(value.shape) == ():
            number = value.item()
            if kind == "count" and isinstance(number, float) and number.is_integer():
                number = int(number)
            ported[name] = number
    return ported


def _is_float_array(value) -> bool:
    if isinstance(value, Tensor):
        return value.dtype.is_floating_point
    return hasattr(value, "shape") and hasattr(value, "dtype") and value.dtype.kind == "f"


def _is_plain(value) -> bool:
    if value is None or isinstance(value, (bool, str)):
        return True
    return isinstance(value, (int, float)) and math.isfinite(value)


def _length(value) -> str:
    return str(len(value)) if isinstance(value, list) else type(value).__name__


def _state_value(value, param: Tensor):
    """A state entry as the optimizer keeps it: arrays on param's device (floating ones
    in param's dtype), numbers unchanged."""
    if isinstance(value, Tensor):
        value = value.array
    if not hasattr(value, "shape"):
        return value
    array = to_device(value, param.device).copy()
    if array.dtype.kind == "f":
        array = array.astype(param.array.dtype, copy=False)
    return array
