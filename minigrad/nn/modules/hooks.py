"""Forward hooks of modules (PyTorch's order and return-value rules): ForwardHooks, the
part of Module that registers them and calls forward through them, and the removable
handle that registering returns."""
from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict
from collections.abc import Callable

HOOK_REGISTRIES = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
               "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs")


class RemovableHandle:
    """What register_forward_hook and register_forward_pre_hook return: remove() takes
    the hook off its module (again, harmlessly); `with handle:` removes it on leaving."""

    _ids = itertools.count()  # unique across modules, so an old handle never removes a new hook

    def __init__(self, hooks: dict, *flags: dict) -> None:
        self.id = next(RemovableHandle._ids)
        self._registries = (hooks, *flags)

    def remove(self) -> None:
        for registry in self._registries:
            registry.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


class ForwardHooks:
    """Hooks around Module.forward, kept in PyTorch's registries: {handle id: hook} in
    call order, and {handle id: True} for the with_kwargs / always_call flags."""

    def _init_forward_hooks(self) -> None:
        for registry in HOOK_REGISTRIES:
            object.__setattr__(self, registry, OrderedDict())

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call hook(module, args) before every forward; a non-None return replaces the
        positional args (a single value becomes a 1-tuple). With with_kwargs=True:
        hook(module, args, kwargs), returning None or a new (args, kwargs). prepend=True
        runs it before the hooks already registered."""
        handle = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._add_hook(self._forward_pre_hooks, handle.id, hook, prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Call hook(module, args, output) after every forward; a non-None return replaces
        the output. With with_kwargs=True: hook(module, args, kwargs, output).
        always_call=True also calls it when forward raises (with output None)."""
        handle = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                                 self._forward_hooks_always_called)
        self._add_hook(self._forward_hooks, handle.id, hook, prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def _add_hook(self, hooks: OrderedDict, hook_id: int, hook: Callable,
                  prepend: bool) -> None:
        if not callable(hook):
            raise TypeError(f"{type(self).__name__}: a hook must be callable, got "
                            f"{type(hook).__name__}")
        hooks[hook_id] = hook
        if prepend:
            hooks.move_to_end(hook_id, last=False)

    def _call_with_hooks(self, args: tuple, kwargs: dict, forward: Callable | None = None):
        """self.forward(*args, **kwargs) between its pre-hooks and hooks (`forward` in
        its place when given: a compiled forward). Hooks registered with
        always_call=True also run when forward (or a hook) raises."""
        args, kwargs = self._run_pre_hooks(args, kwargs)
        output = None
        called = set()
        try:
            output = (forward or self.forward)(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                called.add(hook_id)
                output = self._run_hook(hook_id, hook, args, kwargs, output)
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called:
                    try:
                        output = self._run_hook(hook_id, hook, args, kwargs, output)
                    except Exception as hook_error:
                        warnings.warn(f"a forward hook of {type(self).__name__} registered "
                                      f"with always_call=True raised {hook_error!r} while an "
                                      "earlier error was raised; that error is re-raised",
                                      stacklevel=2)
            raise
        return output

    def _run_pre_hooks(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            f"a forward pre-hook of {type(self).__name__} registered with "
                            f"with_kwargs=True must return None or (args, kwargs), got "
                            f"{result!r}")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        return args, kwargs

    def _run_hook(self, hook_id: int, hook: Callable, args: tuple, kwargs: dict, output):
        if hook_id in self._forward_hooks_with_kwargs:
            result = hook(self, args, kwargs, output)
        else:
            result = hook(self, args, output)
        return output if result is None else result
