"""Module: the base class of every layer. It registers the parameters, buffers and
submodules assigned to it as attributes, and walks them for parameters(), train()/eval()
and repr, with PyTorch's names and dotted naming; calling it runs forward() and any
forward hooks (hooks.py); state_dict(), load_state_dict() and to() are module_state.py's."""
from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable, Iterator

from minigrad.nn.modules.hooks import ForwardHooks
from minigrad.nn.modules.module_state import ModuleState
from minigrad.nn.parameter import Parameter
from minigrad.nn.utils import zero_grads
from minigrad.tensor import Tensor


class Module(ForwardHooks, ModuleState):
    """Base class of layers and models: subclasses set attributes in __init__ and
    define forward(); calling the module calls forward (and its forward hooks)."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)
        self._init_forward_hooks()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        if self._forward_hooks or self._forward_pre_hooks:
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ registration
    def __setattr__(self, name: str, value) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() was called "
                f"(call super().__init__() first in {type(self).__name__}.__init__)"
            )
        if isinstance(value, Parameter):  # a name registered already keeps its place
            self._forget(name, keeping=self._parameters)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._forget(name, keeping=self._modules)
            self._modules[name] = value
        elif name in self._parameters:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as parameter {name!r} "
                    "(nn.Parameter or None expected)"
                )
            self._parameters[name] = None
        elif name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign {type(value).__name__} as buffer {name!r} "
                    "(Tensor or None expected)"
                )
            self._buffers[name] = value
        elif name in self._modules and value is None:
            self._modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        # only called when normal lookup fails: look in the registries
        for registry in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(registry)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if not self._forget(name):
            object.__delattr__(self, name)

    def _forget(self, name: str, keeping: dict | None = None) -> bool:
        """Remove `name` from every registry (but `keeping`) and the instance dict; True if
        it was there."""
        found = False
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry and registry is not keeping:
                del registry[name]
                found = True
        self._non_persistent.discard(name)
        if name in self.__dict__:
            object.__delattr__(self, name)
            found = True
        return found

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register `param` (or None: a declared but absent parameter) as `name`."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be a Parameter or None")
        self._check_new_name(name, "_parameters", "register_parameter")
        self._forget(name, keeping=self._parameters)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that is state but not a parameter (saved in state_dict unless
        persistent=False, moved by to(), never given to an optimizer)."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None")
        self._check_new_name(name, "_buffers", "register_buffer")
        self._forget(name, keeping=self._buffers)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register `module` (or None) as the child `name`, as attribute assignment does."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module or None, got "
                            f"{type(module).__name__}")
        self._check_new_name(name, "_modules", "add_module")
        self._forget(name, keeping=self._modules)
        self._modules[name] = module

    register_module = add_module

    def _check_new_name(self, name: str, registry: str, op: str) -> None:
        """PyTorch's rules: a non-empty string without dots, not already an attribute of
        another kind (re-registering in the same registry replaces the entry)."""
        if not isinstance(name, str):
            raise TypeError(f"{op}: the name must be a string, got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f"{op}: the name must be non-empty and contain no '.', got {name!r}")
        if hasattr(self, name) and name not in getattr(self, registry):
            raise KeyError(f"{op}: attribute {name!r} already exists on "
                           f"{type(self).__name__}")

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator:
        """(dotted name, module) for self and every submodule, depth first. A module
        reachable twice is listed once unless remove_duplicate=False; `memo` is a set of
        modules to skip (it collects the modules listed)."""
        memo = set() if memo is None else memo
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                                remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True) -> Iterator:
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator:
        """(dotted name, parameter) pairs; a shared parameter once unless
        remove_duplicate=False; only this module's own with recurse=False."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator:
        """(dotted name, buffer) pairs, as named_parameters."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path `target` ("" is self), e.g. "encoder.layers.0"."""
        module = self
        for part in target.split(".") if target else []:
            if not hasattr(module, part):
                raise AttributeError(f"get_submodule({target!r}): {type(module).__name__} has "
                                     f"no attribute {part!r}")
            module = getattr(module, part)
            if not isinstance(module, Module):
                raise AttributeError(f"get_submodule({target!r}): {part!r} is a "
                                     f"{type(module).__name__}, not a Module")
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path `target`, e.g. "encoder.layers.0.linear.weight"."""
        module, name = self._owner_of(target, "get_parameter")
        if not isinstance(module._parameters.get(name), Parameter):
            raise AttributeError(f"get_parameter({target!r}): {name!r} is not a parameter of "
                                 f"{type(module).__name__}")
        return module._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path `target`."""
        module, name = self._owner_of(target, "get_buffer")
        if module._buffers.get(name) is None:
            raise AttributeError(f"get_buffer({target!r}): {name!r} is not a buffer of "
                                 f"{type(module).__name__}")
        return module._buffers[name]

    def _owner_of(self, target: str, op: str) -> tuple[Module, str]:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{op}({target!r}): {type(module).__name__} has no attribute "
                                 f"{name!r}")
        return module, name

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call fn on every submodule (children first, depth first) and then on self;
        returns self (e.g. model.apply(init_weights))."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode: bool = True) -> Module:
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set requires_grad on every parameter (False freezes the module); returns self."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        zero_grads(self.parameters(), set_to_none)

    # ------------------------------------------------------------------ repr
    def extra_repr(self) -> str:
        """One line of the layer's settings, shown inside its repr."""
        return ""

    def __repr__(self) -> str:
        """PyTorch's layout: Name(extra_repr) for a leaf, else one indented line per
        extra_repr line and per child."""
        extra_lines = self.extra_repr().split("\n") if self.extra_repr() else []
        child_lines = [f"({name}): " + repr(module).replace("\n", "\n  ")
                       for name, module in self._modules.items()]
        if len(extra_lines) == 1 and not child_lines:
            return f"{type(self).__name__}({extra_lines[0]})"
        lines = extra_lines + child_lines
        body = "\n  " + "\n  ".join(lines) + "\n" if lines else ""
        return f"{type(self).__name__}({body})"

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    # ------------------------------------------------------------------ copies, never pickles
    def __reduce_ex__(self, protocol):
        raise TypeError(
            f"cannot pickle a {type(self).__name__} module: minigrad never pickles modules, "
            "since loading a pickle can run arbitrary code. Save its state instead: "
            "mg.save(model.state_dict(), path), then model.load_state_dict(mg.load(path)) "
            "on a model built by the same code")

    def __copy__(self) -> Module:
        """copy.copy: a module sharing this one's parameters, buffers and submodules."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        return clone

    def __deepcopy__(self, memo: dict) -> Module:
        """copy.deepcopy: a module with its own copy of everything this one holds."""
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        clone.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return clone
