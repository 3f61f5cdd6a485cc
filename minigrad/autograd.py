"""Reverse-mode autograd: the Function node, grad mode and the backward engine.

An instance of a Function is its node in the graph. `Function.apply` runs `forward` on raw
backend arrays and, when grad mode is on and an input requires grad, links the output
tensor to the node. `backward` rules are written with tensor ops, so running them with
grad mode on (`create_graph=True`) records a graph of the gradient itself: that is how
second derivatives work.

The engine (`run_backward`) walks the graph iteratively in topological order (Kahn's
algorithm, no recursion), sums gradients arriving at a node, reduces broadcast gradients
to each input's shape (the one place that does it), calls hooks, and frees saved arrays
unless `retain_graph=True`.
"""
from __future__ import annotations

import contextlib
import traceback
import weakref

import numpy as np

from minigrad.tensor import Tensor


class _EngineState:
    """The engine's only global switches (named in the README)."""

    grad_enabled = True
    anomaly = False  # set by detect_anomaly()
    profiler = None  # a profiler.Profile while one is recording


STATE = _EngineState()


# ----------------------------------------------------------------------------- grad mode


class set_grad_enabled(contextlib.ContextDecorator):  # noqa: N801  (torch's name)
    """Context manager and decorator that turns graph recording on or off."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._previous: list[bool] = []

    def __enter__(self):
        self._previous.append(STATE.grad_enabled)
        STATE.grad_enabled = self.mode

    def __exit__(self, *exc_info):
        STATE.grad_enabled = self._previous.pop()
        return False


class no_grad(set_grad_enabled):  # noqa: N801
    """Build no graph inside: `with mg.no_grad(): ...` or `@mg.no_grad()`."""

    def __init__(self):
        super().__init__(False)


class enable_grad(set_grad_enabled):  # noqa: N801
    """Record a graph again inside a `no_grad` region."""

    def __init__(self):
        super().__init__(True)


def is_grad_enabled() -> bool:
    return STATE.grad_enabled


# ----------------------------------------------------------------------------- Function


class Function:
    """Base of every differentiable op.

    Subclasses implement `forward(self, *arrays, **params) -> array` and
    `backward(self, grad) -> grad or tuple of grads` (one per tensor input, None where no
    gradient flows). Forward saves what backward needs with `save_for_backward(*arrays)`;
    backward reads them back as tensors through `self.saved`: an input's array comes back
    as that input tensor and the output's array as the output, so a backward rule that uses
    them stays connected to the graph for higher derivatives.
    """

    _saved = None
    is_view = False  # True for ops whose output may alias input 0 (shares its version)
    # per-node state that is rarely set: class defaults keep apply() lean
    _freed = False
    _hooks = None
    _retained = None

    inputs: tuple[Tensor, ...]
    needs_input_grad: tuple[bool, ...]

    def forward(self, *arrays, **params):
        raise NotImplementedError

    def backward(self, grad: Tensor):
        raise NotImplementedError

    def save_for_backward(self, *arrays) -> None:
        self._saved = arrays

    @classmethod
    def apply(cls, *inputs: Tensor, **params) -> Tensor:
        if STATE.profiler is not None:
            return STATE.profiler.timed_apply(cls, inputs, params)
        node = cls.__new__(cls)
        try:
            if len(inputs) == 2:  # the common case, without building an argument list
                out = node.forward(inputs[0].data, inputs[1].data, **params)
            else:
                out = node.forward(*[t.data for t in inputs], **params)
        except Exception as exc:
            # NumPy and CuPy reject each other's arrays in many ways; name the devices
            if isinstance(exc, (ValueError, TypeError, IndexError)) or _mixes_devices(inputs):
                raise _op_error(cls.__name__, inputs, exc) from exc
            raise
        if out.__class__ is not np.ndarray and isinstance(out, np.generic):
            out = np.asarray(out)  # NumPy returns scalars from 0-d arithmetic
        if STATE.grad_enabled:
            for t in inputs:
                if t._requires_grad:
                    return node._link(inputs, out)
        version = inputs[0]._version if cls.is_view and inputs else None
        return Tensor._wrap(out, None, version)

    def _link(self, inputs, out) -> Tensor:
        """Make this node the creator of `out`: remember inputs and their versions."""
        self.inputs = inputs
        needs, versions = [], []
        for t in inputs:
            needs.append(t._requires_grad)
            versions.append(t._version[0])
        self.needs_input_grad = needs
        self._versions = versions
        self._out_data = out
        if STATE.anomaly:
            self._trace = "".join(traceback.format_stack()[:-3])
        result = Tensor._wrap(out, self, inputs[0]._version if self.is_view else None)
        self._out_version = result._version
        self._out_version_at_save = result._version[0]
        return result

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def saved(self) -> tuple[Tensor, ...]:
        """The saved arrays as tensors (inputs and output keep their graph)."""
        if self._freed:
            raise RuntimeError(
                f"{self.name}: trying to backward through the graph a second time (or to "
                "read saved tensors after they were freed). Saved arrays are freed after "
                "backward; pass retain_graph=True to the first backward() to keep them."
            )
        return tuple([self._as_tensor(array) for array in self._saved or ()])

    def _as_tensor(self, array) -> Tensor:
        index = 0
        for t in self.inputs:
            if t.data is array:
                if t._version[0] != self._versions[index]:
                    raise _modified_error(self.name, index, self._versions[index], t)
                return t
            index += 1
        if array is self._out_data:
            if self._out_version[0] != self._out_version_at_save:
                raise RuntimeError(
                    f"{self.name}: its output, needed for gradient computation, was modified "
                    "by an in-place operation after it was computed"
                )
            return Tensor._wrap(array, self if STATE.grad_enabled else None)
        return Tensor._wrap(array, None)

    def _free(self) -> None:
        # a node that saved nothing may run its backward again (as in PyTorch)
        self._freed = self._saved is not None
        self._saved = None
        self._out_data = None


def _modified_error(op: str, index: int, expected: int, t: Tensor) -> RuntimeError:
    return RuntimeError(
        f"{op}: input {index} (shape {tuple(t.shape)}, {t.dtype}), needed for gradient "
        f"computation, was modified by an in-place operation: it is at version "
        f"{t._version[0]}, expected version {expected}. Make the in-place change after "
        "backward(), or use an out-of-place op."
    )


def _mixes_devices(inputs) -> bool:
    return len({t.device for t in inputs}) > 1


def _op_error(op: str, inputs, exc: Exception) -> RuntimeError:
    described = ", ".join(
        f"{tuple(t.shape)} {t.dtype.name} on {t.device}" for t in inputs
    )
    devices = {str(t.device) for t in inputs}
    if len(devices) > 1:
        hint = f"expected all tensors on the same device, got {' and '.join(sorted(devices))}"
    else:
        hint = str(exc)
    return RuntimeError(f"{op}: invalid inputs [{described}]: {hint}")


# ----------------------------------------------------------------------------- engine


def run_backward(
    roots,
    root_grads,
    retain_graph: bool = False,
    create_graph: bool = False,
    capture: dict | None = None,
) -> None:
    """Backpropagate `root_grads` from `roots` through the graph.

    Leaves accumulate into `.grad`, unless `capture` (id(tensor) -> None) is given: then
    the gradients of exactly those tensors are stored in it and no `.grad` changes.
    """
    order_deps = _count_dependencies([r.grad_fn for r in roots if r.grad_fn is not None])
    grads: dict[Function, Tensor] = {}
    # leaf gradients are summed over the whole walk, so that leaf hooks and .grad see the
    # total once (as PyTorch's AccumulateGrad does), not one call per path
    leaf_grads: dict[int, list] = {}
    previous_mode = STATE.grad_enabled
    STATE.grad_enabled = create_graph
    try:
        for root, grad in zip(roots, root_grads):
            if root.grad_fn is None:
                _add_leaf_grad(leaf_grads, root, grad)
            else:
                previous = grads.get(root.grad_fn)
                grads[root.grad_fn] = grad if previous is None else previous + grad
        ready = [node for node in grads if node not in order_deps]
        while ready:
            node = ready.pop()
            grad = grads.pop(node, None)
            if grad is None:  # no gradient reached this node: only release its parents
                input_grads = (None,) * len(node.inputs)
            else:
                if node._hooks is not None or node._retained is not None:
                    grad = _run_output_hooks(node, grad, capture)
                input_grads = _call_backward(node, grad)
                if not retain_graph:
                    node._free()
            for inp, needs, g in zip(node.inputs, node.needs_input_grad, input_grads):
                if not needs:
                    continue
                if g is not None:
                    g_array, inp_array = g.data, inp.data
                    if g_array.shape != inp_array.shape or (
                        g_array.dtype is not inp_array.dtype and g_array.dtype != inp_array.dtype
                    ):
                        g = _fit_to_input(g, inp)
                parent = inp.grad_fn
                if parent is None:
                    if g is not None:
                        _add_leaf_grad(leaf_grads, inp, g)
                    continue
                if g is not None:
                    previous = grads.get(parent)
                    grads[parent] = g if previous is None else previous + g
                remaining = order_deps[parent] - 1
                order_deps[parent] = remaining
                if remaining == 0:
                    ready.append(parent)
        borrowed = {id(g.data) for g in root_grads}  # the caller's arrays
        for leaf, g in leaf_grads.values():
            _deliver_to_leaf(leaf, g, capture, borrowed)
    finally:
        STATE.grad_enabled = previous_mode


def _count_dependencies(starts) -> dict:
    """For every node reachable from `starts`: how many reachable nodes consume it."""
    deps: dict[Function, int] = {}
    stack = list(starts)
    seen = set(stack)
    while stack:
        node = stack.pop()
        for inp, needs in zip(node.inputs, node.needs_input_grad):
            parent = inp.grad_fn
            if not needs or parent is None:
                continue
            deps[parent] = deps.get(parent, 0) + 1
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return deps


def _call_backward(node: Function, grad: Tensor) -> tuple:
    if STATE.profiler is not None:
        result = STATE.profiler.timed_backward(node, grad)
    else:
        result = node.backward(grad)
    if not isinstance(result, tuple):
        result = (result,)
    if STATE.anomaly:
        _check_finite(node, result)
    return result


def _fit_to_input(grad: Tensor, inp: Tensor) -> Tensor:
    """Sum a broadcast gradient back to the input's shape; cast it to the input's dtype."""
    from minigrad.ops.shape import sum_to_shape

    if grad.shape != inp.shape:
        grad = sum_to_shape(grad, inp.shape)
    if grad.dtype is not inp.dtype:
        grad = grad.to(inp.dtype)
    return grad


def _add_leaf_grad(leaf_grads: dict, leaf: Tensor, grad: Tensor) -> None:
    entry = leaf_grads.get(id(leaf))
    if entry is None:
        leaf_grads[id(leaf)] = [leaf, grad]
    else:
        entry[1] = entry[1] + grad


def _deliver_to_leaf(leaf: Tensor, grad: Tensor, capture, borrowed: set) -> None:
    for hook in leaf._hooks or ():
        replaced = hook(grad)
        if replaced is not None:
            grad = replaced
    if capture is not None:
        key = id(leaf)
        if key in capture:
            capture[key] = grad if capture[key] is None else capture[key] + grad
        return
    if not leaf._requires_grad:
        return
    if leaf.grad is None:
        # .grad owns its array: never a view, the caller's gradient or another leaf's
        if id(grad.data) in borrowed or not grad.data.flags.owndata:
            grad = grad.clone()
        borrowed.add(id(grad.data))
        leaf.grad = grad
    else:
        leaf.grad = leaf.grad + grad


def _run_output_hooks(node: Function, grad: Tensor, capture) -> Tensor:
    for hook in node._hooks or ():
        replaced = hook(grad)
        if replaced is not None:
            grad = replaced
    if node._retained is not None:
        owner = node._retained()
        if owner is not None:
            if capture is not None:
                if id(owner) in capture:
                    capture[id(owner)] = grad
            else:
                owner.grad = grad if owner.grad is None else owner.grad + grad
    return grad


def _check_finite(node: Function, grads: tuple) -> None:
    for index, g in enumerate(grads):
        if g is None:
            continue
        xp = g.xp
        if not bool(xp.isfinite(g.data).all()):
            where = getattr(node, "_trace", "(no trace recorded)")
            raise RuntimeError(
                f"Function '{node.name}Backward' returned nan or inf values in its "
                f"gradient for input {index} (shape {tuple(g.shape)}). "
                f"The forward call that created it was:\n{where}"
            )


# ----------------------------------------------------------------------------- public API


def backward(tensor: Tensor, gradient=None, retain_graph=None, create_graph=False) -> None:
    """Accumulate d(tensor)/d(leaf) into every leaf's `.grad` (see Tensor.backward)."""
    if not tensor._requires_grad:
        raise RuntimeError(
            "backward(): element 0 of tensors does not require grad and does not have a "
            "grad_fn (did you create it under no_grad, or forget requires_grad=True?)"
        )
    gradient = _default_gradient(tensor, gradient, "backward")
    if retain_graph is None:
        retain_graph = create_graph
    run_backward([tensor], [gradient], retain_graph, create_graph)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple:
    """Gradients of `outputs` with respect to `inputs`, returned instead of accumulated."""
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs)
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError(
                f"grad(): input of shape {tuple(t.shape)} does not require grad"
            )
    root_grads = [_default_gradient(o, g, "grad") for o, g in zip(outputs, grad_outputs)]
    if retain_graph is None:
        retain_graph = create_graph
    capture = {id(t): None for t in inputs}
    retained = []
    for t in inputs:
        if t.grad_fn is not None and t.grad_fn._retained is None:
            t.grad_fn._retained = weakref.ref(t)
            retained.append(t.grad_fn)
    try:
        run_backward(outputs, root_grads, retain_graph, create_graph, capture)
    finally:
        for node in retained:
            node._retained = None
    results = tuple(capture[id(t)] for t in inputs)
    for t, g in zip(inputs, results):
        if g is None and not allow_unused:
            raise RuntimeError(
                f"grad(): an input of shape {tuple(t.shape)} was not used in the graph; "
                "pass allow_unused=True if this is intended"
            )
    return results


def _default_gradient(tensor: Tensor, gradient, caller: str) -> Tensor:
    if gradient is None:
        if tensor.data.size != 1:
            raise RuntimeError(
                f"{caller}(): grad can be implicitly created only for scalar outputs, but "
                f"the output has shape {tuple(tensor.shape)}; pass gradient= of that shape"
            )
        return Tensor._wrap(tensor.xp.ones_like(tensor.data), None)
    if not isinstance(gradient, Tensor):
        gradient = Tensor(gradient, dtype=tensor.dtype, device=tensor.device)
    if gradient.shape != tensor.shape:
        raise RuntimeError(
            f"{caller}(): gradient has shape {tuple(gradient.shape)} but the output has "
            f"shape {tuple(tensor.shape)}"
        )
    return gradient


class detect_anomaly(contextlib.ContextDecorator):  # noqa: N801
    """Inside, a NaN or Inf produced by a backward rule raises, naming the op and showing
    where in the forward code that op was called. Slow: records a stack per op."""

    def __enter__(self):
        self._previous = STATE.anomaly
        STATE.anomaly = True

    def __exit__(self, *exc_info):
        STATE.anomaly = self._previous
        return False


from minigrad.gradcheck import gradcheck, gradgradcheck  # noqa: E402  (re-export)

__all__ = [
    "Function",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
]
