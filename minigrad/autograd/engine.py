"""The backward engine: walks the graph from the outputs back to the leaves.

`run_backward` first counts, for every node reachable from the roots through
`next_functions`, how many edges lead into it (its dependencies). Then it runs the nodes in
topological order (Kahn's algorithm): a node runs once every node that sends it a gradient
has run; there is no recursion, so a 20,000-op chain is fine. Gradients sent to a node are
summed in one place, its buffer. Running a node means:

1. the hooks of the tensor the node made run on the summed gradient, and a tensor that
   asked for retain_grad() keeps it as .grad;
2. `node.backward(grad)` gives one gradient per entry of `next_functions`;
3. each is fitted to the shape and dtype of the tensor its receiving node made (the one
   place where broadcasting is undone) and added to that node's buffer.

The AccumulateGrad nodes at the leaves run the same way; theirs is the step that adds into
`.grad`. Unless `retain_graph=True`, every node releases what it saved right after it
ran; `keeps_graph()` tells a running node which, and `will_execute(node)` whether another
node is still to run in this backward (a compiled forward's nodes free as they go).
`backward` and `grad` are the public entry points (Tensor.backward and mg.autograd.grad).
"""
from __future__ import annotations

import threading

from minigrad import dtypes
from minigrad.autograd.accumulate_grad import AccumulateGrad
from minigrad.autograd.function import freed_graph_error, gradient_edge
from minigrad.autograd.grad_mode import MODES
from minigrad.autograd.node import Node
from minigrad.autograd.unrecorded import copy_gradient, sum_gradients
from minigrad.tensor_base import TensorBase


class _GraphTask(threading.local):
    keep_graph = True  # outside a backward nothing is released
    # the running backward's nodes still to run: a node's edges still to come in, the
    # nodes ready to run, the nodes grad() runs (None: all)
    dependencies: dict = {}
    ready: list = []
    needed: set | None = None


_TASK = _GraphTask()


def keeps_graph() -> bool:
    """Whether the backward running in this thread keeps the graph (retain_graph=True):
    a node that frees what its forward saved while its backward runs asks this first.
    PyTorch's torch._C._autograd._get_current_graph_task_keep_graph. True outside a
    backward."""
    return _TASK.keep_graph


def will_execute(node: Node) -> bool:
    """Whether the backward running in this thread has still to run `node` (PyTorch's
    torch._C._will_engine_execute_node). False outside a backward."""
    task = _TASK
    if node not in task.dependencies or (task.needed is not None and node not in task.needed):
        return False
    return task.dependencies[node] > 0 or node in task.ready


def run_backward(roots, root_grads, retain_graph: bool = False, create_graph: bool = False,
                 capture: dict | None = None) -> None:
    """Backpropagate `root_grads` from `roots` through the graph (see the module doc).

    capture: for grad(), a dict whose keys are nodes; the gradient that reaches each is
    stored as its value instead of flowing on, and only the nodes that lead to them run
    (so no .grad changes)."""
    buffers: dict[Node, TensorBase] = {}  # per node, the sum of the gradients sent to it
    # the memory of every gradient given away so far: a leaf's new .grad must share it
    # neither with the caller's gradients nor with another leaf's .grad
    given_away = set()
    for root, grad in zip(roots, root_grads):
        node = gradient_edge(root)[0]
        buffers[node] = grad if node not in buffers else sum_gradients(buffers[node], grad)
        given_away.add(_memory_of(grad.array))
    root_nodes = list(buffers)
    dependencies = _count_dependencies(root_nodes)
    needed = None if capture is None else _nodes_leading_to(capture, root_nodes, dependencies)
    ready = [node for node in root_nodes if dependencies[node] == 0]
    previous_mode, previous_task = MODES.grad_enabled, _task_state()
    MODES.grad_enabled = create_graph  # record the gradient's own graph only if asked
    _set_task_state(retain_graph, dependencies, ready, needed)
    try:
        while ready:
            node = ready.pop()
            input_grads = (None,) * len(node.next_functions)
            grad = buffers.pop(node, None)
            if grad is not None:
                if node._hooks or node._retained_by is not None:
                    grad = _run_tensor_hooks(node, grad, retain=capture is None)
                if capture is not None and node in capture:
                    capture[node] = grad
                if needed is None or node in needed:
                    input_grads = call_backward(node, grad, given_away)
            for (next_node, _), next_grad in zip(node.next_functions, input_grads):
                if next_node is None:
                    continue
                if next_grad is not None:
                    if (next_grad.array.shape != next_node.grad_shape
                            or next_grad.array.dtype != next_node.grad_dtype):
                        next_grad = _fit(next_grad, next_node, node)
                    total = buffers.get(next_node)  # the one place gradients are summed
                    buffers[next_node] = (next_grad if total is None
                                          else sum_gradients(total, next_grad))
                dependencies[next_node] -= 1
                if dependencies[next_node] == 0:
                    ready.append(next_node)
            if not retain_graph and (needed is None or node in needed):
                node.release()  # (grad() leaves the graph beyond its inputs as it was)
    finally:
        MODES.grad_enabled = previous_mode
        _set_task_state(*previous_task)  # a backward run inside a hook ends: the outer one's


def _task_state() -> tuple:
    return _TASK.keep_graph, _TASK.dependencies, _TASK.ready, _TASK.needed


def _set_task_state(keep_graph: bool, dependencies: dict, ready: list, needed) -> None:
    _TASK.keep_graph, _TASK.dependencies, _TASK.ready, _TASK.needed = (
        keep_graph, dependencies, ready, needed)


def call_backward(node: Node, grad: TensorBase, given_away: set) -> tuple:
    """The gradients `node.backward(grad)` sends to the node's next_functions, as a tuple.
    Under detect_anomaly, they are checked for NaN and Inf."""
    if isinstance(node, AccumulateGrad) and node.variable.grad is None:
        grad = _unshared(grad, given_away)  # it becomes .grad as it is
    input_grads = node.backward(grad)
    if not isinstance(input_grads, tuple):
        input_grads = (input_grads,)
    if MODES.anomaly:
        _check_finite(node, input_grads)
    return input_grads


def _fit(grad: TensorBase, node: Node, sender: Node) -> TensorBase:
    """`grad` as `node` must receive it: the shape and dtype of the tensor node made. The
    gradient of a broadcast input is summed over the broadcast dims (the adjoint of
    broadcasting), and takes the input's dtype. The only place either happens."""
    shape = node.grad_shape
    if grad.array.shape != shape:
        if not _broadcasts_to(shape, grad.array.shape):
            raise RuntimeError(
                f"{sender.name} returned an invalid gradient: shape {tuple(grad.shape)} for "
                f"a tensor of shape {tuple(shape)} (expected that shape, or one it "
                "broadcasts to)"
            )
        grad = grad.sum_to_size(shape)
    if grad.array.dtype != node.grad_dtype:
        grad = grad.to(dtypes.from_numpy(node.grad_dtype))
    return grad


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    if len(shape) > len(target):
        return False
    tail = target[len(target) - len(shape):]
    return all(size in (1, other) for size, other in zip(shape, tail))


def _unshared(grad: TensorBase, given_away: set) -> TensorBase:
    """`grad`, or a copy of it when its memory was given away already in this backward
    (an add's backward sends one gradient to both inputs; a view's sends a view of its
    own): the in-place update of one .grad must not change another, or the caller's
    gradient."""
    memory = _memory_of(grad.array)
    if memory in given_away:
        grad = copy_gradient(grad)
        memory = _memory_of(grad.array)
    given_away.add(memory)
    return grad


def _memory_of(array) -> int:
    """An id of the memory an array uses: its base's for a view (NumPy and CuPy)."""
    base = array.base
    return id(array if base is None else base)


# ----------------------------------------------------------------------------- graph


def _count_dependencies(root_nodes: list) -> dict:
    """For every node reachable from the roots: how many edges of reachable nodes lead
    into it. Raises before any gradient is computed if the graph was released."""
    dependencies = dict.fromkeys(root_nodes, 0)
    stack = list(root_nodes)
    while stack:
        node = stack.pop()
        if node._released:
            raise freed_graph_error(node)
        for next_node, _ in node.next_functions:
            if next_node is None:
                continue
            if next_node not in dependencies:
                dependencies[next_node] = 0
                stack.append(next_node)
            dependencies[next_node] += 1
    return dependencies


def _nodes_leading_to(targets: dict, root_nodes: list, dependencies: dict) -> set:
    """The nodes from which a path of edges reaches one of `targets`: what grad() runs."""
    remaining = dict(dependencies)
    ready = [node for node in root_nodes if remaining[node] == 0]
    order = []  # a topological order: every node before the nodes it sends gradients to
    while ready:
        node = ready.pop()
        order.append(node)
        for next_node, _ in node.next_functions:
            if next_node is not None:
                remaining[next_node] -= 1
                if remaining[next_node] == 0:
                    ready.append(next_node)
    leading = set()
    for node in reversed(order):
        if any(next_node in targets or next_node in leading
               for next_node, _ in node.next_functions):
            leading.add(node)
    return leading


# ----------------------------------------------------------------------------- hooks


def _run_tensor_hooks(node: Node, grad: TensorBase, retain: bool) -> TensorBase:
    """The hooks of the tensor whose gradient `grad` is (a result that is not None
    replaces it), then retain_grad(): the tensor keeps a copy as .grad."""
    for hook in node._hooks or ():
        result = hook(grad)
        if result is not None:
            _check_hook_result(hook, grad, result)
            grad = result
    owner = node._retained_by() if node._retained_by is not None else None
    if retain and owner is not None:
        owner.grad = grad.clone() if owner.grad is None else owner.grad + grad
    return grad


def _check_hook_result(hook, grad: TensorBase, result) -> None:
    """A hook may change a gradient's values, not what it is: a tensor of the same shape,
    dtype and device (PyTorch raises the same way)."""
    name = getattr(hook, "__name__", type(hook).__name__)
    if not isinstance(result, TensorBase):
        raise TypeError(f"hook '{name}' returned a {type(result).__name__}; expected a "
                        "tensor (the new gradient) or None")
    for what, expected, got in (("size", tuple(grad.shape), tuple(result.shape)),
                                ("dtype", grad.dtype, result.dtype),
                                ("device", grad.device, result.device)):
        if expected != got:
            raise RuntimeError(
                f"hook '{name}' has changed the {what} of value: the gradient of a "
                f"tensor of shape {tuple(grad.shape)}, {grad.dtype} on {grad.device} must "
                f"keep its {what} {expected}, but the hook returned {got}"
            )


def _check_finite(node: Node, grads: tuple) -> None:
    """Under detect_anomaly: fail at the first rule that made a NaN or Inf."""
    for index, g in enumerate(grads):
        if g is not None and not bool(g.xp.isfinite(g.array).all()):
            where = node.__dict__.get("_trace", "(no trace recorded)")
            raise RuntimeError(
                f"Function '{node.name}' returned nan or inf values in its gradient for "
                f"input {index} (shape {tuple(g.shape)}). The forward call that created it "
                f"was:\n{where}"
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
    for index, t in enumerate(outputs):
        if not t._requires_grad:
            raise RuntimeError(
                f"grad(): element {index} of the outputs (shape {tuple(t.shape)}) does not "
                "require grad and does not have a grad_fn"
            )
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError(
                f"grad(): input of shape {tuple(t.shape)} does not require grad"
            )
    root_grads = [_default_gradient(o, g, "grad") for o, g in zip(outputs, grad_outputs)]
    if retain_graph is None:
        retain_graph = create_graph
    # the node that receives each input's gradient: its grad_fn, or a leaf's AccumulateGrad
    input_nodes = [gradient_edge(t)[0] for t in inputs]
    capture = dict.fromkeys(input_nodes)
    run_backward(outputs, root_grads, retain_graph, create_graph, capture)
    results = tuple(capture[node] for node in input_nodes)
    for t, g in zip(inputs, results):
        if g is None and not allow_unused:
            raise RuntimeError(
                f"grad(): an input of shape {tuple(t.shape)} was not used in the graph; "
                "pass allow_unused=True if this is intended"
            )
    return results


def _default_gradient(tensor: TensorBase, gradient, caller: str) -> TensorBase:
    if gradient is None:
        if tensor.array.size != 1:
            raise RuntimeError(
                f"{caller}(): grad can be implicitly created only for scalar outputs, but "
                f"the output has shape {tuple(tensor.shape)}; pass gradient= of that shape"
            )
        return tensor._wrap(tensor.xp.ones_like(tensor.array))
    if not isinstance(gradient, TensorBase):
        gradient = tensor._wrap(tensor.xp.asarray(gradient, dtype=tensor.array.dtype))
    if gradient.array.shape != tensor.array.shape:
        raise RuntimeError(
            f"{caller}(): gradient has shape {tuple(gradient.shape)} but the output has "
            f"shape {tuple(tensor.shape)}"
        )
    return gradient
