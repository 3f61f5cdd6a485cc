"""Numerical gradient checking, like torch.autograd.gradcheck.

The analytical Jacobian comes from backward passes with one-hot output gradients; the
numerical one from central differences (f(x + eps) - f(x - eps)) / (x + eps - (x - eps)),
perturbing one input element at a time (the denominator is the step as the input's dtype
stores it, which is not quite 2 eps below float64). They must agree elementwise within
atol + rtol * |numerical|. A floating-point output that does not require grad must not
depend on the inputs (its numerical Jacobian must be zero), as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from minigrad.autograd.engine import grad
from minigrad.tensor_base import TensorBase


def gradcheck(func, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True) -> bool:
    """Check the gradients of `func(*inputs)` against finite differences.

    `inputs` is a tensor or a tuple; tensors that require grad are checked (use float64:
    in float32, eps=1e-6 is below rounding). Raises GradcheckError (or returns False) on
    the first mismatch, naming the input, the output and the worst element.
    """
    inputs = (inputs,) if isinstance(inputs, TensorBase) else tuple(inputs)
    checked = [i for i, t in enumerate(inputs)
               if isinstance(t, TensorBase) and t.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires grad")
    for i in checked:
        if inputs[i].dtype.name != "float64":
            _warn_precision(inputs[i])
    outputs = _as_tuple(func(*inputs))
    for out_index, out in enumerate(outputs):
        if not out.dtype.is_floating_point:
            continue  # indices and masks have no gradient
        for in_index in checked:
            numerical = _numerical_jacobian(func, inputs, out_index, in_index, eps)
            if out.requires_grad:
                analytical = _analytical_jacobian(func, inputs, out_index, in_index)
            else:  # not differentiable, so it must not depend on the input
                analytical = np.zeros_like(numerical)
            if not np.allclose(analytical, numerical, atol=atol, rtol=rtol):
                message = _mismatch(analytical, numerical, in_index, out_index)
                if raise_exception:
                    raise GradcheckError(message)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True, seed: int = 0) -> bool:
    """Check second derivatives: gradcheck of (inputs, v) -> grad(func(inputs), inputs, v)
    built with create_graph=True. `v` is random (float64) unless given."""
    inputs = (inputs,) if isinstance(inputs, TensorBase) else tuple(inputs)
    outputs = _as_tuple(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = tuple(
            _like(o, rng.standard_normal(o.shape)).requires_grad_() for o in outputs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n_inputs = len(inputs)
    differentiable = [t for t in inputs if isinstance(t, TensorBase) and t.requires_grad]

    def first_derivatives(*args):
        primal, cotangents = args[:n_inputs], args[n_inputs:]
        wrt = [t for t in primal if isinstance(t, TensorBase) and t.requires_grad]
        outs = _as_tuple(func(*primal))
        pairs = [(o, v) for o, v in zip(outs, cotangents) if o.requires_grad]
        grads = grad([o for o, _ in pairs], wrt, [v for _, v in pairs], create_graph=True,
                     allow_unused=True)
        return tuple(g if g is not None else t * 0 for g, t in zip(grads, wrt))

    if not differentiable:
        raise ValueError("gradgradcheck: no input requires grad")
    return gradcheck(first_derivatives, inputs + grad_outputs, eps, atol, rtol,
                     raise_exception)


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree."""


def _as_tuple(value) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _like(t: TensorBase, values: np.ndarray) -> TensorBase:
    """A new tensor holding `values`, with t's dtype and device."""
    return t._wrap(t.xp.asarray(values.astype(t.array.dtype)))


def _analytical_jacobian(func, inputs, out_index: int, in_index: int) -> np.ndarray:
    out = _as_tuple(func(*inputs))[out_index]
    target = inputs[in_index]
    jacobian = np.zeros((out.array.size, target.array.size))
    for k in range(out.array.size):
        one_hot = np.zeros(out.array.size)
        one_hot[k] = 1
        cotangent = _like(out, one_hot.reshape(out.shape))
        (g,) = grad(out, [target], cotangent, retain_graph=True, allow_unused=True)
        if g is not None:
            jacobian[k] = g.numpy().reshape(-1)
    return jacobian


def _numerical_jacobian(func, inputs, out_index: int, in_index: int, eps: float):
    target = inputs[in_index]
    data = target.array  # perturbed in place, element by element (views work too)
    out_size = _as_tuple(func(*inputs))[out_index].array.size
    jacobian = np.zeros((out_size, data.size))
    # not under no_grad: gradgradcheck's function itself needs a graph to differentiate
    for j, index in enumerate(np.ndindex(*data.shape)):
        original = data[index].item()
        data[index] = original + eps
        step = data[index].item()
        plus = _as_tuple(func(*inputs))[out_index].numpy().astype(np.float64).reshape(-1)
        data[index] = original - eps
        step -= data[index].item()
        minus = _as_tuple(func(*inputs))[out_index].numpy().astype(np.float64).reshape(-1)
        data[index] = original
        jacobian[:, j] = (plus - minus) / step
    return jacobian


def _mismatch(analytical, numerical, in_index: int, out_index: int) -> str:
    error = np.abs(analytical - numerical)
    worst = np.unravel_index(np.argmax(error), error.shape)
    return (
        f"gradcheck: Jacobian mismatch for output {out_index} with respect to input "
        f"{in_index}: at (output element {worst[0]}, input element {worst[1]}) analytical "
        f"{analytical[worst]:.8g} vs numerical {numerical[worst]:.8g}\n"
        f"analytical:\n{analytical}\nnumerical:\n{numerical}"
    )


def _warn_precision(t) -> None:
    import warnings

    warnings.warn(
        f"gradcheck: input of dtype {t.dtype} is not float64; finite differences with "
        "eps=1e-6 are unreliable below double precision",
        stacklevel=3,
    )
