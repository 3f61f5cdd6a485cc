"""The backward engine: walks the graph from the outputs to the leaves.

`run_backward` visits nodes iteratively in topological order (Kahn's algorithm, no
recursion, so a 20,000-op chain is fine), sums the gradients arriving at each node,
reduces broadcast gradients to each input's shape (the one place that does it), calls
hooks, and frees saved arrays unless `retain_graph=True`. `backward` and `grad` are the
public entry points (Tensor.backward and mg.autograd.grad).
"""
from __future__ import annotations

import weakref

from minigrad.autograd import STATE, Function
from minigrad.tensor import Tensor


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
    order_deps, leaf_deps = _count_dependencies(roots)
    grads: dict[Function, Tensor] = {}
    # a leaf's gradient is summed over every path that reaches it and delivered once, as
    # soon as the last path is done (as PyTorch's AccumulateGrad does): hooks and .grad see
    # the total, and a data-parallel hook can start sending it while backward goes on
    leaf_grads: dict[int, list] = {}
    borrowed = set()  # the caller's arrays, which a leaf's .grad must not alias
    for g in root_grads:
        borrowed.add(id(g.data))
    instrumented = STATE.profiler is not None or STATE.anomaly
    previous_mode = STATE.grad_enabled
    STATE.grad_enabled = create_graph
    try:
        for root, grad in zip(roots, root_grads):
            if root.grad_fn is None:
                _add_leaf_grad(leaf_grads, root, grad)
                _leaf_path_done(leaf_grads, leaf_deps, root, capture, borrowed)
            else:
                previous = grads.get(root.grad_fn)
                grads[root.grad_fn] = grad if previous is None else _accumulate(previous, grad)
        ready = []  # (loops rather than comprehensions: each of those is a call in 3.11)
        for node in grads:
            if order_deps[node] == 0:
                ready.append(node)
        while ready:
            node = ready.pop()
            grad = grads.pop(node, None)
            if grad is None:  # no gradient reached this node: only release its parents
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
                    _leaf_path_done(leaf_grads, leaf_deps, inp, capture, borrowed)
                    continue
                if g is not None:
                    previous = grads.get(parent)
                    grads[parent] = g if previous is None else _accumulate(previous, g)
                remaining = order_deps[parent] - 1
                order_deps[parent] = remaining
                if remaining == 0:
                    ready.append(parent)
        for leaf, g in leaf_grads.values():  # leaves of nodes that were never reached
            _deliver_to_leaf(leaf, g, capture, borrowed)
    finally:
        STATE.grad_enabled = previous_mode


def _count_dependencies(roots) -> tuple[dict, dict]:
    """For every node reachable from the roots: how many reachable nodes consume it (0 for
    the roots' own nodes, unless another root's graph consumes them); and for every leaf
    (by id): how many paths end in it (roots that are leaves included)."""
    deps: dict[Function, int] = {}
    leaf_deps: dict[int, int] = {}
    stack = []
    for root in roots:
        node = root.grad_fn
        if node is None:
            leaf_deps[id(root)] = leaf_deps.get(id(root), 0) + 1
        elif node not in deps:
            deps[node] = 0
            stack.append(node)
    while stack:
        node = stack.pop()
        for inp, needs in zip(node.inputs, node.needs_input_grad):
            if needs:
                parent = inp.grad_fn
                if parent is None:
                    leaf_deps[id(inp)] = leaf_deps.get(id(inp), 0) + 1
                    continue
                count = deps.get(parent)
                if count is None:  # first visit
                    stack.append(parent)
                deps[parent] = 1 if count is None else count + 1
    return deps, leaf_deps


def _instrumented_backward(node: Function, grad: Tensor) -> tuple:
    """node.backward(grad) under the profiler or detect_anomaly."""
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


def _accumulate(total: Tensor, grad: Tensor) -> Tensor:
    """total + grad. Both have the input's shape, dtype and device, so when no graph of
    the gradient is recorded (create_graph=False) the sum is done on the raw arrays,
    without the op machinery; with create_graph it stays a differentiable Add."""
    if STATE.grad_enabled or total.grad_fn is not None or grad.grad_fn is not None:
        return total + grad
    return Tensor._wrap(total.data + grad.data, None)


def _add_leaf_grad(leaf_grads: dict, leaf: Tensor, grad: Tensor) -> None:
    entry = leaf_grads.get(id(leaf))
    if entry is None:
        leaf_grads[id(leaf)] = [leaf, grad]
    else:
        entry[1] = _accumulate(entry[1], grad)


def _leaf_path_done(leaf_grads: dict, leaf_deps: dict, leaf: Tensor, capture,
                    borrowed: set) -> None:
    """One path into `leaf` is finished; deliver its summed gradient after the last one."""
    key = id(leaf)
    remaining = leaf_deps[key] - 1
    leaf_deps[key] = remaining
    if remaining == 0:
        entry = leaf_grads.pop(key, None)
        if entry is not None:
            _deliver_to_leaf(entry[0], entry[1], capture, borrowed)


def _deliver_to_leaf(leaf: Tensor, grad: Tensor, capture, borrowed: set) -> None:
    for hook in leaf._hooks or ():
        replaced = hook(grad)
        if replaced is not None:
            grad = replaced
    if capture is not None:
        key = id(leaf)
        if key in capture:
            capture[key] = grad if capture[key] is None else _accumulate(capture[key], grad)
        return
    if not leaf._requires_grad:
        return
    if leaf.grad is None:
        # .grad owns its array: never a view, the caller's gradient or another leaf's
        if id(grad.data) in borrowed or grad.data.base is not None:
            grad = grad.clone()
        borrowed.add(id(grad.data))
        leaf.grad = grad
    else:
        leaf.grad = _accumulate(leaf.grad, grad)
    for hook in leaf._post_accumulate_hooks or ():
        hook(leaf)


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
                owner.grad = grad if owner.grad is None else _accumulate(owner.grad, grad)
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
    """Accumulate d(tensor)/d(leaf) into the `.grad` of every leaf that requires grad.
    (Also Tensor.backward: `tensor.backward(gradient, retain_graph, create_graph)`.)"""
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
    if gradient.data.shape != tensor.data.shape:
        raise RuntimeError(
            f"{caller}(): gradient has shape {tuple(gradient.shape)} but the output has "
            f"shape {tuple(tensor.shape)}"
        )
    return gradient


