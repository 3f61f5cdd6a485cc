"""Every name of ops.TENSOR_METHODS is one function in two places, `mg.X` and `Tensor.X`,
and both behave as PyTorch's (forward and backward, float64): PyTorch code ports by
changing the import."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import make_tensor
from torch_oracle import MG, TORCH, assert_matches_torch

import minigrad as mg
from minigrad import ops

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.device

# minigrad methods PyTorch's Tensor lacks (it has torch.nn.functional.gelu)
MINIGRAD_ONLY_METHODS = {"gelu"}
TORCH_REFERENCE = {"gelu": torch.nn.functional.gelu}


# name -> (input shapes, element kind, call(L, f, *inputs)); f is mg.X / torch.X, or the
# method Tensor.X, called with the tensor first
CALLS = {
    # elementwise
    "abs": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "absolute": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "add": ([(2, 3), (3,)], "positive", lambda L, f, x, y: f(x, y, alpha=2.0)),
    "atan2": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "ceil": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "clamp": ([(2, 3)], "positive", lambda L, f, x: f(x, 0.8, 1.5)),
    "clamp_max": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "clamp_max_": ([(2, 3)], "signed", lambda L, f, x: f(x, 0.5)),
    "clamp_min": ([(2, 3)], "signed", lambda L, f, x: f(x, -0.5)),
    "clamp_min_": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "clip": ([(2, 3)], "positive", lambda L, f, x: f(x, min=0.9)),
    "cos": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "div": ([(2, 3), (3,)], "positive", lambda L, f, x, y: f(x, y)),
    "divide": ([(2, 3), (3,)], "positive", lambda L, f, x, y: f(x, y, rounding_mode="trunc")),
    "erf": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "exp": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "expm1": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "floor": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "floor_divide": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "fmod": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "gelu": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "hypot": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "lerp": ([(2, 3), (3,), (2, 1)], "signed", lambda L, f, x, y, w: f(x, y, w)),
    "lerp_": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y, 0.25)),
    "log": ([(2, 3)], "positive", lambda L, f, x: f(x)),
    "log1p": ([(2, 3)], "positive", lambda L, f, x: f(x)),
    "masked_fill": ([(2, 3)], "signed",
                    lambda L, f, x: f(x, L.index([[True, False, True]]), -1.5)),
    "maximum": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "minimum": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "mul": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "multiply": ([(2, 3), (2, 1)], "signed", lambda L, f, x, y: f(x, y)),
    "neg": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "negative": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "pow": ([(2, 3), (3,)], "positive", lambda L, f, x, y: f(x, y)),
    "relu": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "remainder": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "round": ([(2, 3)], "signed", lambda L, f, x: f(x, decimals=1)),
    "rsqrt": ([(2, 3)], "positive", lambda L, f, x: f(x)),
    "sigmoid": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "sign": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "sin": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "sqrt": ([(2, 3)], "positive", lambda L, f, x: f(x)),
    "square": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "sub": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y, alpha=-0.5)),
    "subtract": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "tanh": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "true_divide": ([(2, 3), (3,)], "positive", lambda L, f, x, y: f(x, y)),
    # comparisons and logic (few distinct values, so equal ones occur)
    "all": ([(2, 3)], "ties", lambda L, f, x: f(x, 1)),
    "allclose": ([(2, 3), (2, 3)], "ties", lambda L, f, x, y: f(x, y)),
    "any": ([(2, 3)], "ties", lambda L, f, x: f(x, 0, keepdim=True)),
    "eq": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "equal": ([(2, 3), (2, 3)], "ties", lambda L, f, x, y: f(x, y)),
    "ge": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "greater": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "greater_equal": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "gt": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "isclose": ([(2, 3), (2, 3)], "ties", lambda L, f, x, y: f(x, y, atol=0.6)),
    "isfinite": ([(2, 3)], "special", lambda L, f, x: f(x)),
    "isinf": ([(2, 3)], "special", lambda L, f, x: f(x)),
    "isnan": ([(2, 3)], "special", lambda L, f, x: f(x)),
    "le": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "less": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "less_equal": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "logical_and": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "logical_not": ([(2, 3)], "ties", lambda L, f, x: f(x)),
    "logical_or": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "lt": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "ne": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    "not_equal": ([(2, 3), (3,)], "ties", lambda L, f, x, y: f(x, y)),
    # reductions and scans
    "amax": ([(2, 3)], "signed", lambda L, f, x: f(x, 1)),
    "amin": ([(2, 3, 2)], "signed", lambda L, f, x: f(x, (0, 2), keepdim=True)),
    "argmax": ([(2, 3)], "signed", lambda L, f, x: f(x, 1)),
    "argmin": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "cumprod": ([(2, 3)], "signed", lambda L, f, x: f(x, 1)),
    "cumsum": ([(2, 3)], "signed", lambda L, f, x: f(x, 0)),
    "log_softmax": ([(2, 3)], "signed", lambda L, f, x: f(x, 1)),
    "logsumexp": ([(2, 3)], "signed", lambda L, f, x: f(x, 1)),
    "max": ([(2, 3)], "signed", lambda L, f, x: f(x, 1)),
    "mean": ([(2, 3)], "signed", lambda L, f, x: f(x, 0)),
    "min": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "norm": ([(2, 3)], "signed", lambda L, f, x: f(x, 3, 1, keepdim=True)),
    "softmax": ([(2, 3)], "signed", lambda L, f, x: f(x, -1)),
    "std": ([(2, 3)], "signed", lambda L, f, x: f(x, 1)),
    "sum": ([(2, 3)], "signed", lambda L, f, x: f(x, (0, 1))),
    "trace": ([(3, 3)], "signed", lambda L, f, x: f(x)),
    "var": ([(2, 3)], "signed", lambda L, f, x: f(x, 0, keepdim=True)),
    # products
    "addmm": ([(3,), (2, 4), (4, 3)], "signed",
              lambda L, f, x, a, b: f(x, a, b, beta=0.5, alpha=2.0)),
    "baddbmm": ([(2, 1, 3), (2, 2, 4), (2, 4, 3)], "signed",
                lambda L, f, x, a, b: f(x, a, b, alpha=-1.5)),
    "bmm": ([(2, 2, 3), (2, 3, 2)], "signed", lambda L, f, x, y: f(x, y)),
    "dot": ([(3,), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "matmul": ([(2, 3), (3,)], "signed", lambda L, f, x, y: f(x, y)),
    "mm": ([(2, 3), (3, 2)], "signed", lambda L, f, x, y: f(x, y)),
    "outer": ([(3,), (2,)], "signed", lambda L, f, x, y: f(x, y)),
    # shape
    "chunk": ([(5, 2)], "signed", lambda L, f, x: f(x, 2)),
    "clone": ([(2, 3)], "signed", lambda L, f, x: f(x)),
    "contiguous": ([(2, 3)], "signed", lambda L, f, x: f(x.T)),
    "diag": ([(3,)], "signed", lambda L, f, x: f(x, -1)),
    "diagonal": ([(2, 3, 4)], "signed", lambda L, f, x: f(x, 1, -1, 0)),
    "expand_as": ([(3, 1), (2, 3, 4)], "signed", lambda L, f, x, y: f(x, y)),
    "flatten": ([(2, 3, 2)], "signed", lambda L, f, x: f(x, 1)),
    "flip": ([(2, 3)], "signed", lambda L, f, x: f(x, (0, 1))),
    "narrow": ([(4, 3)], "signed", lambda L, f, x: f(x, 0, 1, 2)),
    "repeat": ([(2, 3)], "signed", lambda L, f, x: f(x, 2, 1, 2)),
    "repeat_interleave": ([(2, 3)], "signed", lambda L, f, x: f(x, 2, dim=1)),
    "reshape_as": ([(2, 3), (3, 2)], "signed", lambda L, f, x, y: f(x, y)),
    "roll": ([(2, 3)], "signed", lambda L, f, x: f(x, (1, -1), (0, 1))),
    "select": ([(2, 3)], "signed", lambda L, f, x: f(x, 1, -1)),
    "split": ([(5, 2)], "signed", lambda L, f, x: f(x, [2, 3])),
    "squeeze": ([(2, 1, 3)], "signed", lambda L, f, x: f(x, 1)),
    "swapaxes": ([(2, 3, 4)], "signed", lambda L, f, x: f(x, 0, 2)),
    "swapdims": ([(2, 3, 4)], "signed", lambda L, f, x: f(x, -1, 1)),
    "tile": ([(2, 3)], "signed", lambda L, f, x: f(x, (2,))),
    "transpose": ([(2, 3)], "signed", lambda L, f, x: f(x, 0, 1)),
    "tril": ([(3, 3)], "signed", lambda L, f, x: f(x, -1)),
    "triu": ([(3, 4)], "signed", lambda L, f, x: f(x, 1)),
    "unbind": ([(2, 3)], "signed", lambda L, f, x: f(x, 1)),
    "unsqueeze": ([(2, 3)], "signed", lambda L, f, x: f(x, 1)),
    "view": ([(2, 3)], "signed", lambda L, f, x: f(x, 3, 2)),
    "view_as": ([(2, 3), (6,)], "signed", lambda L, f, x, y: f(x, y)),
    # selection, ordering and sampling
    "argsort": ([(2, 4)], "ties", lambda L, f, x: f(x, dim=1, descending=True, stable=True)),
    "argwhere": ([(2, 3)], "ties", lambda L, f, x: f(x)),
    "gather": ([(3, 4)], "signed", lambda L, f, x: f(x, 1, L.index([[0, 3], [1, 1], [2, 0]]))),
    "index_add": ([(3, 4), (2, 4)], "signed",
                  lambda L, f, x, y: f(x, 0, L.index([2, 2]), y, alpha=0.5)),
    "index_add_": ([(3, 4), (3, 2)], "signed", lambda L, f, x, y: f(x, 1, L.index([3, 0]), y)),
    "index_copy": ([(3, 4), (3, 2)], "signed", lambda L, f, x, y: f(x, 1, L.index([3, 0]), y)),
    "index_copy_": ([(3, 4), (1, 4)], "signed", lambda L, f, x, y: f(x, 0, L.index([1]), y)),
    "index_fill": ([(3, 4)], "signed", lambda L, f, x: f(x, 1, L.index([0, 2]), -1.5)),
    "index_fill_": ([(3, 4)], "signed", lambda L, f, x: f(x, 0, L.index([-1]), 2.0)),
    "index_select": ([(3, 4)], "signed", lambda L, f, x: f(x, 0, L.index([2, 0, 2]))),
    "masked_scatter": ([(2, 3), (6,)], "signed",
                       lambda L, f, x, y: f(x, L.index([True, False, True]), y)),
    "masked_scatter_": ([(2, 3), (2, 2)], "signed",
                        lambda L, f, x, y: f(x, L.index([[False], [True]]), y)),
    "masked_select": ([(2, 3)], "signed", lambda L, f, x: f(x, L.index([[True], [False]]))),
    "multinomial": ([(2, 4)], "positive", lambda L, f, x: f(x, 3)),
    "nonzero": ([(2, 3)], "ties", lambda L, f, x: f(x)),
    "scatter": ([(3, 4), (3, 2)], "signed",
                lambda L, f, x, y: f(x, 1, L.index([[0, 3], [1, 2], [2, 0]]), y)),
    "scatter_": ([(3, 4)], "signed", lambda L, f, x: f(x, 0, L.index([[2, 0, 1, 1]]), 7.0)),
    "scatter_add": ([(3, 4), (3, 2)], "signed",
                    lambda L, f, x, y: f(x, 1, L.index([[0, 0], [1, 2], [3, 3]]), y)),
    "scatter_add_": ([(3, 4), (2, 4)], "signed",
                     lambda L, f, x, y: f(x, 0, L.index([[2, 0, 1, 1], [2, 2, 0, 1]]), y)),
    "sort": ([(2, 4)], "signed", lambda L, f, x: f(x, 1, descending=True)),
    "take": ([(2, 3)], "signed", lambda L, f, x: f(x, L.index([[5, -1], [0, 0]]))),
    "take_along_dim": ([(2, 3)], "signed", lambda L, f, x: f(x, L.index([[2, 0]]), 1)),
    "topk": ([(2, 5)], "signed", lambda L, f, x: f(x, 2, dim=1, largest=False)),
    "sum_to_size": ([(2, 3)], "signed", lambda L, f, x: f(x, 1, 3)),
    "unique": ([(2, 3)], "ties", lambda L, f, x: f(x, return_inverse=True, return_counts=True)),
}

ELEMENTS = {
    "signed": lambda rng, shape: rng.uniform(0.2, 2.0, shape) * rng.choice([-1, 1], shape),
    "positive": lambda rng, shape: rng.uniform(0.5, 2.0, shape),
    "ties": lambda rng, shape: rng.choice([0.0, 0.5, 1.0], shape),
    "special": lambda rng, shape: rng.choice([np.nan, np.inf, -np.inf, 0.0, -1.5], shape),
}


def test_every_table_name_has_a_call():
    assert set(CALLS) == set(ops.TENSOR_METHODS)


@pytest.mark.parametrize("name", ops.TENSOR_METHODS)
def test_method_and_function_are_the_op_itself(name):
    """Tensor.X is the op function (no adapter, no twin); mg.X exists exactly where torch.X
    does, and is that same function."""
    op = getattr(ops, name)
    assert mg.Tensor.__dict__[name] is op
    assert hasattr(mg, name) == hasattr(torch, name), name
    if hasattr(mg, name):
        assert getattr(mg, name) is op
    assert hasattr(torch.Tensor, name) or name in MINIGRAD_ONLY_METHODS


@pytest.mark.parametrize("form", ["function", "method"])
@pytest.mark.parametrize("name", ops.TENSOR_METHODS)
def test_matches_torch(name, form):
    if form == "function" and not hasattr(torch, name):
        pytest.skip(f"torch has no torch.{name}")
    shapes, kind, call = CALLS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    arrays = [ELEMENTS[kind](rng, shape) for shape in shapes]
    inplace = name.endswith("_")
    ours = [make_tensor(a, requires_grad=not inplace) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=not inplace) for a in arrays]
    reference = TORCH_REFERENCE.get(name) or (
        getattr(torch, name) if form == "function" else getattr(torch.Tensor, name))
    mine = getattr(mg, name) if form == "function" else getattr(mg.Tensor, name)
    our_out, their_out = call(MG, mine, *ours), call(TORCH, reference, *theirs)
    if name == "multinomial":  # random: the same kind of result
        assert our_out.shape == tuple(their_out.shape) and our_out.dtype is mg.int64
        return
    if inplace:  # the call returns its first input, changed
        assert our_out is ours[0]
    assert_matches_torch(ours, theirs, our_out, their_out)
