"""mg.compile: PyTorch's torch.compile names on minigrad's capture and replay.

    step = mg.compile(train_step)          # forward, backward, optimizer step: one plan
    model = mg.compile(model)              # the forward, its backward as nodes of the graph
    @mg.compile
    def decode(ids): ...

The first call with a new combination of guards (guards.py) captures the step: it runs
once, eagerly, with every array operation recorded (capture.py), the state it changed is
put back, and the plan is replayed; its result is compared with the eager run's, bit for
bit. Later calls with that combination replay the plan alone. A step that cannot be
captured runs eagerly, with one warning naming the op and the line (fullgraph=True
raises instead); after CACHE_SIZE_LIMIT plans, new combinations run eagerly.

MINIGRAD_DEBUG=compile prints every plan as it is made (plan.py, Plan.describe), with
its fused groups and their kernels' source; MINIGRAD_COMPILE_FUSION=0 turns fusion off
(fusion.py). Both are read at each capture.
"""
from __future__ import annotations

import functools
import sys
import warnings

from minigrad import random
from minigrad.amp.autocast_mode import STATE as AUTOCAST
from minigrad.compile.buffers import Blocks
from minigrad.compile.capture import Broken, capture
from minigrad.compile.cuda_graph import GRAPH_MODES, use_cuda_graphs
from minigrad.compile.guards import argument_objects, call_facts
from minigrad.compile.plan import prints_plans
from minigrad.compile.results import rebuilt
from minigrad.compile.steps import GuardFailed, user_stacklevel
from minigrad.compile.traced import ACTIVE
from minigrad.nn.modules.module import Module

CACHE_SIZE_LIMIT = 8  # plans per compiled function (torch._dynamo.config.cache_size_limit)
# captures of one call key that changed Python state before its calls run eagerly for good:
# a change made once (a set-up at the first call, a cache filled) is not made again
CAPTURES_THAT_CHANGE = 2
MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class Unsupported(RuntimeError):
    """fullgraph=True and the step cannot be captured whole (torch._dynamo's name)."""


def compile(model=None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            mode: str | None = None, disable: bool = False):
    """Capture a function or a Module's forward once and replay it (module docstring).

    fullgraph: raise Unsupported where the step cannot be captured, instead of running
        it eagerly with a warning.
    dynamic: accepted for PyTorch's signature; sizes are not symbolic here, so each new
        shape is a new plan (up to CACHE_SIZE_LIMIT).
    mode: one of PyTorch's modes; all replay the same plan (there is no autotuning),
        and "reduce-overhead" and "max-autotune" launch a GPU plan as one CUDA graph
        where it can be (cuda_graph.py).
    disable: return `model` itself, uncompiled.
    Used without `model`, returns a decorator: `@mg.compile(fullgraph=True)`."""
    if mode not in MODES:
        raise ValueError(f"compile: unknown mode {mode!r}; expected one of "
                         f"{', '.join(repr(m) for m in MODES)}")
    if dynamic not in (None, True, False):
        raise TypeError(f"compile: dynamic must be None, True or False, got {dynamic!r}")
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, mode=mode,
                                 disable=disable)
    if disable:
        return model
    if isinstance(model, Module):  # its forward: its own hooks run around the replay
        forward = CompiledFunction(model.forward, fullgraph, mode)
        forward.__name__ = type(model).__name__
        return OptimizedModule(model, forward)
    if not callable(model):
        raise TypeError(f"compile: expected a function or a Module, got "
                        f"{type(model).__name__}")
    return CompiledFunction(model, fullgraph, mode)


class CompiledFunction:
    """A function with its plans (see the module docstring)."""

    def __init__(self, fn, fullgraph: bool, mode: str | None = None):
        functools.update_wrapper(self, fn, updated=())
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self._fn = fn
        self._fullgraph = fullgraph
        self._cuda_graphs = mode in GRAPH_MODES
        self._plans: dict[tuple, list] = {}
        self._plan_count = 0
        self._eager: dict = {}  # call key whose step cannot be captured -> why
        self._changes: dict = {}  # call key -> captures that changed Python state
        self._warned: set[str] = set()
        self._blocks = Blocks()  # memory for its plans' buffers (buffers.py)

    def plans(self) -> list:
        """The plans captured so far (plan.py): `.describe()` prints one as
        MINIGRAD_DEBUG=compile does, `.fused_groups()` gives its fused kernels."""
        return [entry.plan for entries in self._plans.values() for entry in entries]

    def __get__(self, instance, owner=None):
        # decorating a method: the instance is an argument like any other
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args, **kwargs):
        if ACTIVE.recorder is not None:  # inside another capture: be part of it
            return self._fn(*args, **kwargs)
        if True in AUTOCAST.enabled.values():  # this thread's regions, on any device
            return self._eager_call("an autocast region (not captured)", args, kwargs)
        tensors, key = call_facts(args, kwargs)
        if key in self._eager:  # warned about at its first call
            return self._eager_call(self._eager[key], args, kwargs)
        entries = self._plans.get(key, ())
        for index, entry in enumerate(entries):
            if entry.checks.hold(tensors):
                if index:  # the plan that fits now comes first next time
                    entries.insert(0, entries.pop(index))
                return self._replay(entry, tensors, args, kwargs)
        if self._plan_count >= CACHE_SIZE_LIMIT:
            return self._eager_call(f"more than {CACHE_SIZE_LIMIT} plans (cache_size_limit): "
                                    "the guards keep changing", args, kwargs)
        return self._capture(key, tensors, args, kwargs)

    def _replay(self, entry, tensors, args, kwargs):
        sources = entry.plan.random_sources
        states = [(s, s.get_state() if s is not None else random.get_rng_state())
                  for s in sources] if sources else ()
        try:
            return rebuilt(entry.replay(tensors), entry.result_shape)
        except GuardFailed:
            # a value read during the capture differs: the eager step decides (it raises
            # where the value is an error, as for an index out of range), drawing the
            # random numbers the replay drew
            for source, state in states:
                if source is None:
                    random.set_rng_state(state)
                else:
                    source.set_state(state)
            return self._fn(*args, **kwargs)

    def _capture(self, key, tensors, args, kwargs):
        try:
            captured = capture(self._fn, args, kwargs, tensors)
        except Exception as failure:
            # the step failed (its changes undone): eagerly it fails the same way, with
            # eager's state and traceback; if it does not, the capture is at fault
            result = self._fn(*args, **kwargs)
            self._eager[key] = f"the capture failed ({failure!r})"
            if self._fullgraph:
                raise self._unsupported(self._eager[key]) from failure
            self._warn(self._eager[key])
            return result
        if captured is None:  # another thread is capturing
            return self._fn(*args, **kwargs)
        if isinstance(captured, Broken):
            self._changes[key] = self._changes.get(key, 0) + captured.changes
            if not captured.changes or self._changes[key] >= CAPTURES_THAT_CHANGE:
                self._eager[key] = captured.reason  # for good
            return self._eager_call(captured.reason, args, kwargs)
        entry, expected = captured
        entry.pinned = argument_objects(args, kwargs)
        entry.share_blocks(self._blocks)
        if self._cuda_graphs:  # the first replay, checked below, launches the graph
            use_cuda_graphs(entry, self.__name__)
        if prints_plans():
            text = entry.plan.describe()
            for index, backward in enumerate(entry.backwards):  # a compiled forward's
                which = f" of output {index}" if len(entry.backwards) > 1 else ""
                text += f"\nits backward's{which} {backward.plan.describe()}"
            print(f"[minigrad compile] {self.__name__}\n{text}", file=sys.stderr)
        self._plans.setdefault(key, []).append(entry)
        self._plan_count += 1
        try:
            outputs = entry.replay(tensors)
            difference = expected.mismatch(entry, tensors, outputs)
        except GuardFailed as failed:  # on the capture's own inputs: the plan is wrong
            difference = f"a check ({failed})"
        except Exception as failure:  # noqa: BLE001  (eager ran; the plan cannot)
            difference = f"an error ({failure!r})"
        if difference is None:
            for place in entry.prints:
                self._say(f"print() at {place} prints when the step is captured, not at its "
                          "replays, which run no Python (print outside the compiled "
                          "function, or return what it prints)")
            return rebuilt(outputs, entry.result_shape)
        # the plan misses something the eager run did: never hand out its numbers
        self._plans[key].remove(entry)
        self._eager[key] = f"its replay differs from the eager run in {difference}"
        expected.rollback.restore()  # undo the replay too: the eager step starts afresh
        return self._eager_call(self._eager[key], args, kwargs)

    def _eager_call(self, reason: str, args, kwargs):
        if self._fullgraph:
            raise self._unsupported(reason)
        self._warn(reason)
        return self._fn(*args, **kwargs)

    def _unsupported(self, reason: str) -> Unsupported:
        return Unsupported(f"mg.compile(fullgraph=True): {self.__name__} cannot be "
                           f"captured whole: {reason}")

    def _warn(self, reason: str) -> None:
        self._say(f"runs eagerly: {reason}")

    def _say(self, text: str) -> None:
        """One warning per text, for each compiled function, at the user's call."""
        if text not in self._warned:
            self._warned.add(text)
            warnings.warn(f"mg.compile: {self.__name__} {text}", RuntimeWarning,
                          stacklevel=user_stacklevel())


class OptimizedModule(Module):
    """What mg.compile(module) returns (PyTorch's name): calling it replays the
    module's compiled forward; everything else is the module's (`_orig_mod`)."""

    def __init__(self, module: Module, forward: CompiledFunction):
        super().__init__()
        self._orig_mod = module
        object.__setattr__(self, "_compiled_forward", forward)

    def forward(self, *args, **kwargs):
        module = self._modules["_orig_mod"]
        if module._forward_hooks or module._forward_pre_hooks:  # Python: eager, each call
            return module._call_with_hooks(args, kwargs, self._compiled_forward)
        return self._compiled_forward(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)
