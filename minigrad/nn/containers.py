"""Containers: Sequential (chains its modules), ModuleList and ModuleDict (hold modules
so that they are registered, without defining a forward)."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator

from minigrad.nn.module import Module


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
