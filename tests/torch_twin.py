"""A minigrad module and its torch twin holding the same weights, run on the same float64
inputs: helpers that copy weights either way through state_dict and compare outputs and
the gradients of inputs and of every parameter."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")

# float64 results of the same formula in a different order differ by ~1e-15 relative
TOLERANCE = {"rtol": 1e-10, "atol": 1e-10}
DIRECTIONS = ("torch_to_ours", "ours_to_torch")


def direction_of(case_index: int) -> str:
    """Successive cases load the weights alternately each way."""
    return DIRECTIONS[case_index % 2]


def share_weights(ours, theirs, direction: str) -> None:
    """Load one module's state_dict into the other (arrays converted, names unchanged)."""
    if direction == "torch_to_ours":
        ours.load_state_dict({name: value.detach().numpy()
                              for name, value in theirs.state_dict().items()})
    else:
        theirs.load_state_dict({name: torch.from_numpy(value.numpy().copy())
                                for name, value in ours.state_dict().items()})


def pair(array, requires_grad: bool = True):
    """The same array as a minigrad tensor and a torch tensor (bools stay bool)."""
    array = np.asarray(array)
    grad = requires_grad and array.dtype.kind == "f"
    return mg.tensor(array, requires_grad=grad), torch.tensor(array, requires_grad=grad)


def pairs(arrays: dict) -> tuple[dict, dict]:
    """{name: array} -> ({name: minigrad tensor}, {name: torch tensor}); non-arrays
    (flags) go to both as they are."""
    ours, theirs = {}, {}
    for name, value in arrays.items():
        if isinstance(value, np.ndarray):
            ours[name], theirs[name] = pair(value, requires_grad=False)
        else:
            ours[name] = theirs[name] = value
    return ours, theirs


def assert_close(ours, theirs) -> None:
    assert ours is not None and theirs is not None
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TOLERANCE)


def backward_both(outputs, outputs_t, rng) -> None:
    """Backpropagate sum_i <output_i, g_i> with the same random g_i through both (a
    random upstream gradient: sums alone are blind to softmax and layer norm)."""
    loss, loss_t = 0, 0
    for out, out_t in zip(outputs, outputs_t, strict=True):
        upstream = rng.standard_normal(tuple(out.shape))
        loss = loss + (out * mg.tensor(upstream)).sum()
        loss_t = loss_t + (out_t * torch.tensor(upstream)).sum()
    loss.backward()
    loss_t.backward()


def assert_parameter_grads_match(ours, theirs) -> None:
    """Every parameter, by name, in the same order as torch's, has torch's gradient."""
    theirs_parameters = dict(theirs.named_parameters())
    ours_parameters = dict(ours.named_parameters())
    assert list(ours_parameters) == list(theirs_parameters)
    for name, parameter in ours_parameters.items():
        assert parameter.grad is not None, name
        assert_close(parameter.grad, theirs_parameters[name].grad)
