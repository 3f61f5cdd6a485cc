"""ParameterList and ParameterDict: parameters held in a list or dict, registered so that
parameters(), state_dict() ("0", "1", ... or the keys) and to() see them, as in PyTorch.
A plain tensor put in one becomes a Parameter."""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from minigrad.nn.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor


def _as_parameter(value, container: str) -> Parameter:
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)
    raise TypeError(f"{container}: expected a Parameter or Tensor, got {type(value).__name__}")


class ParameterList(Module):
    """A list of parameters, registered under the names "0", "1", ..."""

    def __init__(self, values: Iterable[Tensor] | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def append(self, value: Tensor) -> ParameterList:
        self.register_parameter(str(len(self)), _as_parameter(value, "ParameterList"))
        return self

    def extend(self, values: Iterable[Tensor]) -> ParameterList:
        for value in values:
            self.append(value)
        return self

    def _position(self, index: int) -> str:
        if not -len(self) <= index < len(self):
            raise IndexError(f"ParameterList: index {index} is out of range for "
                             f"{len(self)} parameters")
        return str(index % len(self))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ParameterList(list(self)[index])
        return self._parameters[self._position(index)]

    def __setitem__(self, index: int, value: Tensor) -> None:
        # in place, keeping the order (register_parameter would move it to the end)
        self._parameters[self._position(index)] = _as_parameter(value, "ParameterList")

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())

    def extra_repr(self) -> str:
        return "\n".join(f"({name}): Parameter containing: [{p.dtype} of size "
                         f"{tuple(p.shape)}]" for name, p in self._parameters.items())


class ParameterDict(Module):
    """An ordered dict of name -> parameter."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def update(self, parameters) -> None:
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for name, value in items:
            self[name] = value

    def __getitem__(self, name: str) -> Parameter:
        if name not in self._parameters:
            raise KeyError(f"ParameterDict has no parameter {name!r}; it has "
                           f"{list(self._parameters)}")
        return self._parameters[name]

    def __setitem__(self, name: str, value: Tensor) -> None:
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"ParameterDict: a key must be a non-empty string without '.', "
                           f"got {name!r}")
        if name in self._parameters:  # keeps its place, as in a dict
            self._parameters[name] = _as_parameter(value, "ParameterDict")
        else:
            self.register_parameter(name, _as_parameter(value, "ParameterDict"))

    def __delitem__(self, name: str) -> None:
        del self._parameters[name]

    def __contains__(self, name: str) -> bool:
        return name in self._parameters

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def pop(self, name: str) -> Parameter:
        value = self[name]
        del self[name]
        return value

    def extra_repr(self) -> str:
        return "\n".join(f"({name}): Parameter containing: [{p.dtype} of size "
                         f"{tuple(p.shape)}]" for name, p in self._parameters.items())
