"""Containers, as PyTorch's container.py: Sequential (chains its modules), ModuleList and
ModuleDict (hold modules so that they are registered, without defining a forward), and
ParameterList and ParameterDict: parameters held in a list or dict, registered so that
parameters(), state_dict() ("0", "1", ... or the keys) and to() see them. A plain tensor
put in a parameter container becomes a Parameter."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator

from minigrad.nn.modules.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor


class Sequential(Module):
    """Calls its modules in order: Sequential(a, b)(x) == b(a(x)). Accepts modules or one
    OrderedDict of name -> module."""

    def __init__(self, *modules) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(modules):
                self.add_module(str(index), module)

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[_checked_index(index, len(self))]

    def __setitem__(self, index: int, module: Module) -> None:
        """Replace the module at `index`, in its place and under its name."""
        self.add_module(list(self._modules)[_checked_index(index, len(self))], module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleList(Module):
    """A list of modules, registered under the names "0", "1", ..."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        self.extend(items)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        return self._modules[str(_checked_index(index, len(self)))]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_checked_index(index, len(self))), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleDict(Module):
    """An ordered dict of name -> module."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def update(self, modules) -> None:
        items = modules.items() if hasattr(modules, "items") else modules
        for name, module in items:
            self.add_module(name, module)

    def __getitem__(self, name: str) -> Module:
        return self._modules[name]

    def __setitem__(self, name: str, module: Module) -> None:
        self.add_module(name, module)

    def __delitem__(self, name: str) -> None:
        del self._modules[name]

    def __contains__(self, name: str) -> bool:
        return name in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()


def _checked_index(index: int, length: int) -> int:
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range for a container of {length} modules")
    return index % length


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
