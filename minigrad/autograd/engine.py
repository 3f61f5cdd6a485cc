"""The backward engine: walks the graph from the outputs back to the leaves.

`run_backward` counts, for every node reachable from the roots, how many consumers it has,
then visits the nodes in topological order (Kahn's algorithm: a node runs once all its
consumers have sent their gradient; no recursion, so a 20,000-op chain is fine). At each
node it calls the op's backward rule, reduces every gradient to its input's shape (the one
place where broadcasting is undone) and passes it on. A leaf's gradient is summed over all
paths and accumulated into `.grad` as soon as its last path is done. Unless
`retain_graph=True`, every node drops what it holds of the forward pass right after its
backward ran. `backward` and `grad` are the public entry points (Tensor.backward and
mg.autograd.grad).
"""
from __future__ import annotations

import weakref

from minigrad.autograd.function import INSTRUMENTS, Function
from minigrad.autograd.grad_mode import MODES
from minigrad.tensor_base import TensorBase


class _Walk:
    """The state of one backward pass that the leaves need (the nodes' state lives in
    run_backward's locals).

    leaf_grads:  leaf -> its summed gradient, until the leaf's paths are done
    leaf_paths:  leaf -> how many paths into the leaf are not done yet
    owned:       ids of the arrays (memory buffers) that a leaf's .grad must not share: the
                 caller's gradients and those already given to another leaf
    capture:     for mg.autograd.grad: id(tensor) -> its gradient; then no .grad changes

    (Tensors are dict keys by identity: Tensor.__hash__ is object's.)
    """

    __slots__ = ("leaf_grads", "leaf_paths", "owned", "capture")

    def __init__(self, leaf_paths: dict, root_grads, capture):
        self.leaf_grads: dict[TensorBase, TensorBase] = {}
        self.leaf_paths = leaf_paths
        self.owned = set()
        for g in root_grads:
            base = g.data.base
            self.owned.add(id(g.data if base is None else base))
        self.capture = capture


def run_backward(roots, root_grads, retain_graph: bool = False, create_graph: bool = False,
                 capture: dict | None = None) -> None:
    """Backpropagate `root_grads` from `roots` through the graph (see the module doc).

    grads maps a node to the sum of the gradients its consumers have sent so far, and
    consumers to how many of them have not sent theirs yet; a node whose count reaches 0
    is ready, and runs."""
    consumers, leaf_paths = _count_consumers(roots)
    walk = _Walk(leaf_paths, root_grads, capture)
    grads: dict[Function, TensorBase] = {}
    # under the profiler or detect_anomaly (which checks every gradient for NaN), each
    # backward rule runs through _instrumented_backward
    instrumented = INSTRUMENTS.profiler is not None or MODES.anomaly
    previous_mode = MODES.grad_enabled
    MODES.grad_enabled = create_graph  # record the gradient's own graph only if asked
    try:
        ready = []
        for root, grad in zip(roots, root_grads):
            node = root.grad_fn
            if node is None:
                _send_to_leaf(walk, root, grad)
                continue
            previous = grads.get(node)
            grads[node] = grad if previous is None else _sum(previous, grad)
            if consumers[node] == 0 and node not in ready:
                ready.append(node)
        while ready:
            node = ready.pop()
            grad = grads.pop(node, None)
            if grad is None:  # no gradient reached this node: it only releases its inputs
                input_grads = (None,) * len(node.inputs)
            else:
                if node._hooks is not None or node._retained is not None:
                    grad = _run_output_hooks(node, grad, capture)
                if instrumented:
                    input_grads = _instrumented_backward(node, grad)
                else:
                    input_grads = node.backward(grad)
                if input_grads.__class__ is not tuple:
                    input_grads = (input_grads,)
            for inp, needs, grad in zip(node.inputs, node.needs_input_grad, input_grads):
                if not needs:
                    continue
                if grad is not None and (grad.data.shape != inp.data.shape
                                         or grad.data.dtype != inp.data.dtype):
                    grad = _fit_to_input(grad, inp)
                parent = inp.grad_fn
                if parent is None:
                    _send_to_leaf(walk, inp, grad)
                    continue
                if grad is not None:
                    previous = grads.get(parent)
                    grads[parent] = grad if previous is None else _sum(previous, grad)
                consumers[parent] -= 1
                if consumers[parent] == 0:
                    ready.append(parent)
            if not retain_graph:
                node._free()
        for leaf, grad in walk.leaf_grads.items():  # leaves whose other paths never ran
            _deliver_to_leaf(walk, leaf, grad)
    finally:
        MODES.grad_enabled = previous_mode


def _instrumented_backward(node: Function, grad) -> tuple | TensorBase:
    """node.backward(grad), timed under the profiler; under detect_anomaly, its gradients
    are checked for NaN and Inf."""
    if INSTRUMENTS.profiler is not None:
        input_grads = INSTRUMENTS.profiler.timed_backward(node, grad)
    else:
        input_grads = node.backward(grad)
    if MODES.anomaly:
        _check_finite(node, input_grads if input_grads.__class__ is tuple else (input_grads,))
    return input_grads


def _fit_to_input(grad: TensorBase, inp: TensorBase) -> TensorBase:
    """The gradient of a broadcast input is the sum over the broadcast dims (the adjoint of
    broadcasting); it also takes the input's dtype. The only place either happens."""
    array, target = grad.data, inp.data
    if array.shape != target.shape:
        grad = grad.sum_to_size(target.shape)
    if array.dtype != target.dtype:
        grad = grad.to(inp.dtype)
    return grad


def _sum(total: TensorBase, grad: TensorBase) -> TensorBase:
    """total + grad, as a tensor op when the gradient's graph is being recorded."""
    if MODES.grad_enabled:
        return total + grad
    return total._wrap(total.data + grad.data)


# ----------------------------------------------------------------------------- leaves


def _send_to_leaf(walk: _Walk, leaf: TensorBase, grad) -> None:
    """Sum `grad` into the leaf's pending gradient; deliver it after the last path."""
    remaining = walk.leaf_paths[leaf] - 1
    walk.leaf_paths[leaf] = remaining
    if leaf in walk.leaf_grads:  # an earlier path sent a gradient
        pending = walk.leaf_grads.pop(leaf)
        grad = pending if grad is None else _sum(pending, grad)
    if grad is None:
        return
    if remaining:
        walk.leaf_grads[leaf] = grad
    else:
        _deliver_to_leaf(walk, leaf, grad)


def _deliver_to_leaf(walk: _Walk, leaf: TensorBase, grad: TensorBase) -> None:
    """Run the leaf's hooks, then accumulate into `.grad` (or into `capture`), then run
    its post-accumulate hooks (DistributedDataParallel starts sending from these)."""
    for hook in leaf._hooks or ():
        replaced = hook(grad)
        if replaced is not None:
            grad = replaced
    if walk.capture is not None:
        key = id(leaf)
        if key in walk.capture:
            previous = walk.capture[key]
            walk.capture[key] = grad if previous is None else _sum(previous, grad)
        return
    if not leaf._requires_grad:
        return
    if leaf.grad is None:
        leaf.grad = _adopt(walk, grad, leaf)
    elif MODES.grad_enabled or not _accumulates_in_place(leaf.grad, grad):
        leaf.grad = leaf.grad + grad if MODES.grad_enabled else _sum(leaf.grad, grad)
    else:
        leaf.grad.data += grad.data  # in place, as PyTorch does outside create_graph
        leaf.grad._version[0] += 1
    for hook in leaf._post_accumulate_hooks or ():
        hook(leaf)


def _adopt(walk: _Walk, grad: TensorBase, leaf: TensorBase) -> TensorBase:
    """`grad` itself as a new `.grad` when nothing else holds its memory and it is laid out
    as the leaf is, else a copy: the caller's gradient, another leaf's .grad, read-only
    (broadcast) views and a transposed gradient of a contiguous leaf are copied (an
    optimizer then walks .grad and the leaf in the same order, not across strides)."""
    array = grad.data
    base = array.base  # a view's base is the array that owns the memory (NumPy and CuPy)
    buffer = id(array if base is None else base)
    flags = array.flags
    if buffer in walk.owned or not getattr(flags, "writeable", True) or (
            not flags.c_contiguous
            and (leaf.data.flags.c_contiguous or not _writable(array))):
        grad = grad._wrap(grad.xp.array(array, copy=True, order="C"), grad.grad_fn)
        buffer = id(grad.data)
    walk.owned.add(buffer)
    return grad


def _accumulates_in_place(total: TensorBase, grad: TensorBase) -> bool:
    """`total.data += grad.data` is safe: same shape and dtype, writeable, no graph."""
    array = total.data
    return (total.grad_fn is None and not total._requires_grad and _writable(array)
            and array.shape == grad.data.shape and array.dtype == grad.data.dtype)


def _writable(array) -> bool:
    """False for a read-only NumPy array and for a view that repeats elements (a zero
    stride, as an expanded gradient has; CuPy allows writing into those)."""
    flags = array.flags
    if not getattr(flags, "writeable", True):
        return False
    if flags.c_contiguous or flags.f_contiguous:  # no element repeats in a contiguous array
        return True
    for size, stride in zip(array.shape, array.strides):
        if stride == 0 and size > 1:
            return False
    return True


# ----------------------------------------------------------------------------- graph


def _count_consumers(roots) -> tuple[dict, dict]:
    """For every node reachable from the roots: how many reachable nodes consume it (0 for
    the roots' own nodes, unless another root's graph consumes them); and for every leaf:
    how many paths end in it (roots that are leaves included)."""
    consumers: dict[Function, int] = {}
    leaf_paths: dict[TensorBase, int] = {}
    stack = []
    for root in roots:
        node = root.grad_fn
        if node is None:
            leaf_paths[root] = leaf_paths.get(root, 0) + 1
        elif node not in consumers:
            if node._freed:
                raise _freed_error(node)
            consumers[node] = 0
            stack.append(node)
    while stack:
        node = stack.pop()
        for inp, needs in zip(node.inputs, node.needs_input_grad):
            if not needs:
                continue
            parent = inp.grad_fn
            if parent is None:
                leaf_paths[inp] = leaf_paths.get(inp, 0) + 1
                continue
            count = consumers.get(parent)
            if count is None:  # first visit
                if parent._freed:
                    raise _freed_error(parent)
                stack.append(parent)
                count = 0
            consumers[parent] = count + 1
    return consumers, leaf_paths


def _freed_error(node: Function) -> RuntimeError:
    return RuntimeError(
        f"{node.name}: trying to backward through the graph a second time (or to read "
        "saved tensors after they were freed). Saved arrays are freed after backward; pass "
        "retain_graph=True to the first backward() to keep them."
    )


# ----------------------------------------------------------------------------- hooks


def _run_output_hooks(node: Function, grad, capture):
    """Hooks registered on the node's output (Tensor.register_hook on a non-leaf), and
    `.grad` of an output that asked for retain_grad()."""
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
                owner.grad = grad if owner.grad is None else _sum(owner.grad, grad)
    return grad


def _check_finite(node: Function, grads: tuple) -> None:
    """Under detect_anomaly: fail at the first rule that made a NaN or Inf."""
    for index, g in enumerate(grads):
        if g is not None and not bool(g.xp.isfinite(g.data).all()):
            where = getattr(node, "_trace", "(no trace recorded)")
            raise RuntimeError(
                f"Function '{node.name}Backward' returned nan or inf values in its "
                f"gradient for input {index} (shape {tuple(g.shape)}). "
                f"The forward call that created it was:\n{where}"
            )


# ----------------------------------------------------------------------------- public API


def backward(tensor: TensorBase, gradient=None, retain_graph=None, create_graph=False,
             inputs=None) -> None:
    """Accumulate d(tensor)/d(leaf) into the `.grad` of every leaf that requires grad (of
    the tensors in `inputs` only, when given). This is Tensor.backward.

    `gradient` is required unless the tensor has one element; `retain_graph=True` keeps
    the graph for another backward; `create_graph=True` records the gradient's own graph
    (for higher derivatives)."""
    if not tensor._requires_grad:
        raise RuntimeError(
            "backward(): element 0 of tensors does not require grad and does not have a "
            "grad_fn (did you create it under no_grad, or forget requires_grad=True?)"
        )
    gradient = _default_gradient(tensor, gradient, "backward")
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is None:
        run_backward([tensor], [gradient], retain_graph, create_graph)
        return
    inputs = [inputs] if isinstance(inputs, TensorBase) else list(inputs)
    grads = grad(tensor, inputs, gradient, retain_graph, create_graph, allow_unused=True)
    for t, g in zip(inputs, grads):
        if g is not None:
            t.grad = g if t.grad is None else t.grad + g


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False) -> tuple:
    """Gradients of `outputs` with respect to `inputs`, returned instead of accumulated."""
    outputs = [outputs] if isinstance(outputs, TensorBase) else list(outputs)
    inputs = [inputs] if isinstance(inputs, TensorBase) else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, TensorBase):
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
    retained = []  # non-leaf inputs: their nodes report the gradient while the walk runs
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


def _default_gradient(tensor: TensorBase, gradient, caller: str) -> TensorBase:
    if gradient is None:
        if tensor.data.size != 1:
            raise RuntimeError(
                f"{caller}(): grad can be implicitly created only for scalar outputs, but "
                f"the output has shape {tuple(tensor.shape)}; pass gradient= of that shape"
            )
        return tensor._wrap(tensor.xp.ones_like(tensor.data))
    if not isinstance(gradient, TensorBase):
        gradient = tensor._wrap(tensor.xp.asarray(gradient, dtype=tensor.data.dtype))
    if gradient.data.shape != tensor.data.shape:
        raise RuntimeError(
            f"{caller}(): gradient has shape {tuple(gradient.shape)} but the output has "
            f"shape {tuple(tensor.shape)}"
        )
    return gradient
