"""The small integer dtypes (uint8, int8, int16, int32), PyTorch's dtype aliases, type
promotion checked against torch.result_type on every pair of dtypes and operand kinds
(tensors, 0-d tensors, Python and NumPy scalars), integer arithmetic, and mg.iinfo /
mg.finfo. PyTorch (CPU build) is the oracle."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import make_tensor

import minigrad as mg

torch = pytest.importorskip("torch")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
INTEGERS = ["uint8", "int8", "int16", "int32", "int64"]
SCALARS = [True, 3, -2, 2.5, np.float64(2.5), np.float32(0.5), np.int64(3), np.int8(-1)]


def _name(torch_dtype) -> str:
    return str(torch_dtype).removeprefix("torch.")


def _operand(lib, name: str, kind: str):
    """A tensor of dtype `name`: "dim" has shape (3,), "0d" is a 0-d tensor."""
    values = [True, False, True] if name == "bool" else [1, 2, 3]
    values = values if kind == "dim" else values[0]
    if lib is mg:
        return make_tensor(np.array(values), dtype=name)
    return torch.tensor(values, dtype=getattr(torch, name))


# ----------------------------------------------------------------------------- the dtypes


@pytest.mark.parametrize("alias", ["int", "short", "long", "half", "float", "double",
                                   "uint8", "int8", "int16", "int32", "bool"])
def test_dtype_names_and_aliases_are_pytorchs(alias):
    assert getattr(mg, alias).name == _name(getattr(torch, alias))


@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes_match_pytorch(name):
    ours, theirs = getattr(mg, name), getattr(torch, name)
    assert ours.is_floating_point == theirs.is_floating_point
    assert ours.is_signed == theirs.is_signed and ours.itemsize == theirs.itemsize


@pytest.mark.parametrize("make", [
    lambda lib: lib.tensor(np.array([1, 2], np.int32)),
    lambda lib: lib.tensor(np.array([1, 2], np.uint8)),
    lambda lib: lib.tensor([1, 2], dtype=lib.int16),
    lambda lib: lib.zeros(2, dtype=lib.int8),
    lambda lib: lib.arange(3, dtype=lib.int32),
    lambda lib: lib.full((2,), 7, dtype=lib.uint8),
    lambda lib: lib.tensor([1.5], dtype=float),
    lambda lib: lib.tensor([1.5], dtype=int),
], ids=["numpy_int32", "numpy_uint8", "int16", "zeros_int8", "arange_int32", "full_uint8",
        "python_float", "python_int"])
def test_creation_keeps_or_makes_the_dtype_pytorch_does(make):
    assert make(mg).dtype.name == _name(make(torch).dtype)


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point.*int32"):
        mg.zeros(2, dtype=mg.int32, requires_grad=True)


# ----------------------------------------------------------------------------- promotion


@pytest.mark.device
@pytest.mark.parametrize("kinds", [("dim", "dim"), ("dim", "0d"), ("0d", "dim"), ("0d", "0d")],
                         ids="-".join)
@pytest.mark.parametrize("first", NAMES)
def test_tensor_pairs_promote_as_in_pytorch(first, kinds):
    for second in NAMES:
        a, b = (_operand(mg, first, kinds[0]), _operand(mg, second, kinds[1]))
        theirs = torch.result_type(_operand(torch, first, kinds[0]),
                                   _operand(torch, second, kinds[1]))
        product = a * b
        assert mg.result_type(a, b).name == _name(theirs) == product.dtype.name, (first, second)
        assert product.array.dtype == product.dtype.np


@pytest.mark.device
@pytest.mark.parametrize("kind", ["dim", "0d"])
@pytest.mark.parametrize("name", NAMES)
def test_scalars_promote_as_in_pytorch(name, kind):
    for scalar in SCALARS:
        theirs = _name(torch.result_type(_operand(torch, name, kind), scalar))
        tensor = _operand(mg, name, kind)
        assert mg.result_type(tensor, scalar).name == theirs, scalar
        assert (tensor + scalar).dtype.name == (scalar * tensor).dtype.name == theirs, scalar


@pytest.mark.parametrize("first", NAMES)
def test_promote_types_matches_pytorch(first):
    for second in NAMES:
        ours = mg.promote_types(getattr(mg, first), getattr(mg, second))
        assert ours.name == _name(torch.promote_types(getattr(torch, first),
                                                      getattr(torch, second)))


# ----------------------------------------------------------------------------- arithmetic


@pytest.mark.device
@pytest.mark.parametrize("op", [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
    lambda a, b: a // b, lambda a, b: a == b, lambda a, b: a.maximum(b),
], ids=["add", "sub", "mul", "truediv", "floordiv", "eq", "maximum"])
@pytest.mark.parametrize("pair", [("uint8", "int8"), ("int8", "int8"), ("uint8", "uint8"),
                                  ("int16", "int32"), ("int32", "float16"), ("int8", "int64")],
                         ids="-".join)
def test_integer_arithmetic_gives_pytorchs_values_and_dtypes(op, pair):
    """Results that overflow the narrow dtypes (250 + 250 in uint8, 100 * 100 in int8)
    wrap around as in PyTorch; true division of integers gives the default float."""
    rng = np.random.default_rng(0)
    first, second = (_values(name, rng) for name in pair)
    second[second == 0] = 3  # no integer division by zero
    ours = op(make_tensor(first), make_tensor(second))
    theirs = op(torch.from_numpy(first), torch.from_numpy(second))
    assert ours.dtype.name == _name(theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def _values(name: str, rng) -> np.ndarray:
    """12 values of dtype `name`, as large as 250 where the dtype holds it."""
    if name not in INTEGERS:
        return rng.integers(1, 9, 12).astype(name)
    limits = np.iinfo(name)
    values = rng.integers(max(limits.min, -100), min(limits.max, 250) + 1, 12).astype(name)
    values[0] = min(limits.max, 250)
    return values


@pytest.mark.device
@pytest.mark.parametrize("name", INTEGERS + ["bool"])
def test_sums_of_small_integers_are_int64_as_in_pytorch(name):
    values = np.full((4, 70), 200 if name == "uint8" else 1).astype(name)
    for reduce in (lambda t: t.sum(), lambda t: t.sum(1), lambda t: t.cumsum(1)):
        ours, theirs = reduce(make_tensor(values)), reduce(torch.from_numpy(values))
        assert ours.dtype is mg.int64 and ours.array.dtype == np.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_gradients_flow_through_ops_mixing_floats_and_integers():
    x = mg.tensor([1.0, -2.0, 0.5], requires_grad=True)
    weights = mg.tensor([3, -1, 2], dtype=mg.int16)
    out = x * weights + mg.tensor(1, dtype=mg.uint8)
    assert out.dtype is mg.float32
    (out * mg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.dtype is mg.float32 and x.grad.tolist() == [3.0, -2.0, 6.0]


# ----------------------------------------------------------------------------- iinfo, finfo


@pytest.mark.parametrize("name", INTEGERS)
def test_iinfo_matches_pytorch(name):
    ours, theirs = mg.iinfo(getattr(mg, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, ours.min, ours.max, ours.dtype) == (theirs.bits, theirs.min,
                                                            theirs.max, theirs.dtype)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_finfo_matches_pytorch(name):
    ours, theirs = mg.finfo(getattr(mg, name)), torch.finfo(getattr(torch, name))
    for attribute in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                      "dtype"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
    assert repr(ours) == repr(theirs) and mg.finfo().dtype == torch.finfo().dtype


@pytest.mark.parametrize("call, match", [
    (lambda: mg.iinfo(mg.float32), "iinfo: expected an integer dtype"),
    (lambda: mg.iinfo(mg.bool), "iinfo: expected an integer dtype"),
    (lambda: mg.finfo(mg.int32), "finfo: expected a floating dtype"),
    (lambda: mg.finfo("float32"), "finfo: expected a floating dtype"),
])
def test_limits_of_the_wrong_kind_of_dtype_raise(call, match):
    with pytest.raises(TypeError, match=match):
        call()
