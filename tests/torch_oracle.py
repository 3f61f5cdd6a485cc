"""PyTorch as the oracle of an op: one call, written once for both libraries, run on the
same arrays; the outputs must agree in shape, dtype and value, and the gradients of every
float input under a random upstream gradient (a plain sum is blind to many wrong rules).

`Lib` hands the call what differs between the libraries: the module (`L.lib.take`) and
index or mask tensors (`L.index([0, 2])`). `assert_matches_torch` is the comparison, for
tests that build their inputs and calls their own way.
"""
from __future__ import annotations

import numpy as np
import pytest
from helpers import make_tensor

import minigrad as mg

torch = pytest.importorskip("torch")

# results of one formula evaluated in another order differ by a few ulps of their dtype
TOLERANCES = {"float64": {"rtol": 1e-10, "atol": 1e-12},
              "float32": {"rtol": 1e-6, "atol": 1e-7},
              "float16": {"rtol": 2e-3, "atol": 1e-4}}
EXACT = {"rtol": 0, "atol": 0}  # integers and bools


class Lib:
    """What a call needs of its library: the module itself (`L.lib`) and index or mask
    tensors (`L.index([0, 2])`)."""

    def __init__(self, lib):
        self.lib = lib

    def index(self, values):
        array = np.asarray(values)
        return make_tensor(array) if self.lib is mg else torch.as_tensor(array)


MG, TORCH = Lib(mg), Lib(torch)


def check_against_torch(call, *arrays, layout: str = "contiguous", seed: int = 0) -> None:
    """call(L, *tensors) in minigrad (leaves in `layout` on the test device) and in torch
    agree: outputs (a tensor or a tuple of them) and the float inputs' gradients."""
    ours = [make_tensor(a, requires_grad=_is_float(a), layout=layout) for a in arrays]
    theirs = [torch.tensor(np.asarray(a), requires_grad=_is_float(a)) for a in arrays]
    assert_matches_torch(ours, theirs, call(MG, *ours), call(TORCH, *theirs), seed)


def assert_matches_torch(ours: list, theirs: list, our_result, their_result,
                         seed: int = 0) -> None:
    """Inputs `ours` and `theirs` gave `our_result` and `their_result` (a tensor, a bool,
    or a nested tuple of them): every output agrees in shape, dtype and value, and the
    backward of sum(output * upstream) over the outputs that require grad, with upstream
    drawn from N(0, 1) (a plain sum is blind to many wrong rules) and 0 where torch's
    output is not finite, gives every input the same gradient."""
    our_outputs, their_outputs = _as_list(our_result), _as_list(their_result)
    assert len(our_outputs) == len(their_outputs)
    rng = np.random.default_rng(seed)
    our_loss = their_loss = 0
    for o, t in zip(our_outputs, their_outputs):
        if isinstance(t, bool):
            assert o is t
            continue
        assert tuple(o.shape) == tuple(t.shape), (o.shape, t.shape)
        assert o.dtype.name == str(t.dtype).removeprefix("torch."), (o.dtype, t.dtype)
        expected = t.detach().numpy()
        np.testing.assert_allclose(o.numpy(), expected, **TOLERANCES.get(o.dtype.name, EXACT))
        if o.requires_grad and t.requires_grad:
            finite = np.isfinite(expected)
            upstream = np.where(finite, rng.standard_normal(expected.shape), 0.0)
            if not finite.all():  # an upstream of 0 times inf would be NaN
                o = o.masked_fill(make_tensor(~finite), 0.0)
                t = t.masked_fill(torch.as_tensor(~finite), 0.0)
            our_loss = our_loss + (o * make_tensor(upstream)).sum()
            their_loss = their_loss + (t * torch.as_tensor(upstream)).sum()
    if isinstance(our_loss, int):
        return
    our_loss.backward()
    their_loss.backward()
    for o, t in zip(ours, theirs):
        if t.requires_grad:
            expected = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
            got = np.zeros(o.shape) if o.grad is None else o.grad.numpy()
            np.testing.assert_allclose(got, expected, **TOLERANCES[o.dtype.name])


def check_error_like_torch(call, *arrays, fragments=()) -> None:
    """call raises in torch, and in minigrad with the same exception type and a message
    holding each fragment (minigrad's messages name the op and the shapes)."""
    with pytest.raises(Exception) as theirs:
        call(TORCH, *[torch.as_tensor(np.asarray(a)) for a in arrays])
    with pytest.raises(type(theirs.value)) as ours:
        call(MG, *[make_tensor(np.asarray(a)) for a in arrays])
    for fragment in fragments:
        assert fragment in str(ours.value), (fragment, str(ours.value))


def _is_float(array) -> bool:
    return np.asarray(array).dtype.kind == "f"


def _as_list(value) -> list:
    """The tensors of a result: a tensor, or a (nested) tuple or list of them."""
    if isinstance(value, (tuple, list)):
        return [t for part in value for t in _as_list(part)]
    return [value]
