"""All parameters as one flat vector and back (PyTorch's torch.nn.utils.convert_parameters):
for optimizers and second-order methods that work on a single vector."""
from __future__ import annotations

from collections.abc import Iterable

from minigrad.autograd import no_grad
from minigrad.ops import cat
from minigrad.tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated in order, as one 1-D tensor; gradients
    flow back to each parameter."""
    parameters = list(parameters)
    _check_one_device(parameters, "parameters_to_vector")
    return cat([param.reshape(-1) for param in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-D `vec` into the parameters, in order, each
    reshaped to its parameter's shape. The parameters keep their identity, dtype and
    device (PyTorch instead makes each a view of vec), and vec must hold exactly as many
    elements as they do."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"vector_to_parameters: expected a Tensor as vec, but got: "
                        f"{type(vec).__name__}")
    parameters = list(parameters)
    _check_one_device(parameters, "vector_to_parameters")
    total = sum(param.numel() for param in parameters)
    if vec.ndim != 1 or vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: expected a 1-D vec of {total} elements "
                           f"(the parameters' total), got shape {tuple(vec.shape)}")
    start = 0
    with no_grad():
        for param in parameters:
            count = param.numel()
            param.copy_(vec[start:start + count].reshape(param.shape))
            start += count


def _check_one_device(parameters: list[Tensor], op: str) -> None:
    devices = sorted({str(param.device) for param in parameters})
    if len(devices) > 1:
        raise TypeError(f"{op}: found parameters on different devices ({', '.join(devices)}); "
                        "all must be on one device")
