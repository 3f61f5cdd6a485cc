"""Optimizer: the base class holding param_groups and per-parameter state, with
PyTorch's state_dict layout (parameters named by their index across all groups)."""
from __future__ import annotations

import copy

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
        """Restore hyperparameters and state (copied, cast to each parameter's device)."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has {len(groups)} parameter groups, the "
                             f"optimizer has {len(self.param_groups)}")
        params_by_index = {}
        for saved, group in zip(groups, self.param_groups, strict=True):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"loaded state dict has a parameter group of {len(saved['params'])} "
                    f"parameters where the optimizer's group has {len(group['params'])}"
                )
            params_by_index.update(zip(saved["params"], group["params"], strict=True))
        self.state = {}
        for index, entries in state_dict["state"].items():
            param = params_by_index[int(index)]
            self.state[param] = {name: _state_value(value, param)
                                 for name, value in entries.items()}
        for saved, group in zip(groups, self.param_groups, strict=True):
            for name, value in saved.items():
                if name != "params":
                    group[name] = copy.deepcopy(value)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for index, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {index}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def _state_value(value, param: Tensor):
    """A state entry as the optimizer keeps it: arrays on param's device (floating ones
    in param's dtype), numbers unchanged."""
    if isinstance(value, Tensor):
        value = value.data
    if not hasattr(value, "shape"):
        return value
    array = to_device(value, param.device).copy()
    if array.dtype.kind == "f":
        array = array.astype(param.data.dtype, copy=False)
    return array
