"""What PyTorch code meets beyond the ops: mg.Size, f-string formatting of 0-d tensors,
view() that refuses to copy where PyTorch's does, mg.bfloat16 that explains itself, and
AttributeErrors that say what minigrad has instead."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from helpers import shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import suggest

torch = pytest.importorskip("torch")


# ----------------------------------------------------------------------------- Size


def test_shape_and_size_are_a_size():
    x = mg.zeros(2, 3, 4)
    assert isinstance(x.shape, mg.Size) and isinstance(x.size(), mg.Size)
    assert x.shape == (2, 3, 4) and x.size() == torch.Size([2, 3, 4])
    assert x.shape.numel() == 24 == mg.Size([2, 3, 4]).numel()
    assert mg.Size(()).numel() == 1
    assert x.size(1) == 3 and x.size(-1) == 4 and isinstance(x.size(0), int)
    assert repr(x.shape) == "minigrad.Size([2, 3, 4])"
    assert isinstance(x.shape + (5,), mg.Size) and x.shape + (5,) == (2, 3, 4, 5)
    batch, *rest = x.shape
    assert batch == 2 and rest == [3, 4]
    assert mg.zeros(*x.shape[1:]).shape == (3, 4)
    with pytest.raises(IndexError, match="size: dimension 3"):
        x.size(3)


# ----------------------------------------------------------------------------- format


def test_format_of_a_0d_tensor_is_the_number():
    loss = mg.tensor(1.23456789)
    assert f"{loss:.4f}" == "1.2346" == f"{torch.tensor(1.23456789):.4f}"
    assert f"{mg.tensor(7):>4d}" == "   7"
    assert format(mg.tensor(2.5), "") == "2.5" == format(torch.tensor(2.5), "")


def test_format_spec_of_larger_tensors_raises_like_torch():
    x = mg.tensor([1.0, 2.0])
    assert f"{x}" == str(x)
    with pytest.raises(TypeError, match=r"0-d.*shape \(2,\).*\.item\(\)"):
        f"{x:.4f}"
    with pytest.raises(TypeError):
        f"{torch.tensor([1.0, 2.0]):.4f}"


# ----------------------------------------------------------------------------- view


@st.composite
def layouts_and_targets(draw):
    """A tensor made non-contiguous by a permutation and a step, and a target shape."""
    shape = draw(shapes(min_dims=1, max_dims=4, max_side=4))
    order = draw(st.permutations(range(len(shape))))
    step = draw(st.sampled_from([1, 2]))
    size = int(np.prod(shape))
    factors = [d for d in range(1, size + 1) if size % d == 0]
    first = draw(st.sampled_from(factors))
    second = draw(st.sampled_from([d for d in factors if (size // first) % d == 0]))
    target = draw(st.sampled_from([(size,), (first, -1), (first, second, -1), (1, first, -1),
                                   tuple(shape)]))
    return shape, order, step, target


@settings(max_examples=200, deadline=None)
@given(case=layouts_and_targets())
def test_view_copies_nothing_and_raises_exactly_where_torch_does(case):
    shape, order, step, target = case
    buffer = np.arange(int(np.prod(shape)) * step, dtype=np.float64)
    ours = mg.from_numpy(buffer[::step].reshape(shape)).permute(*order)
    theirs = torch.from_numpy(buffer)[::step].reshape(shape).permute(*order)
    assert [s // 8 for s, n in zip(ours.array.strides, ours.shape) if n > 1] == \
        [s for s, n in zip(theirs.stride(), theirs.shape) if n > 1]
    try:
        expected = theirs.view(*target)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="view.*reshape"):
            ours.view(*target)
        np.testing.assert_array_equal(ours.reshape(*target).numpy(), theirs.reshape(*target))
        return
    viewed = ours.view(*target)
    np.testing.assert_array_equal(viewed.numpy(), expected.numpy())
    assert np.shares_memory(viewed.array, buffer)


def test_view_of_a_transpose_raises_and_reshape_copies():
    x = mg.arange(6.0).reshape(2, 3).T
    with pytest.raises(RuntimeError, match="contiguous"):
        x.view(6)
    assert x.reshape(6).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert x.contiguous().view(6).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert not x.is_contiguous() and x.contiguous().is_contiguous()
    assert x.view(3, 1, 2).shape == (3, 1, 2)  # splitting a dim is fine


# ----------------------------------------------------------------------------- bfloat16


@pytest.mark.parametrize("use", [
    lambda: mg.zeros(2, dtype=mg.bfloat16),
    lambda: mg.tensor([1.0], dtype=mg.bfloat16),
    lambda: mg.ones(2).to(mg.bfloat16),
    lambda: mg.randn(2, dtype=mg.bfloat16),
    lambda: mg.ones(2).to("cpu", dtype=mg.bfloat16),
    lambda: mg.tensor([1.0], dtype="bfloat16"),
])
def test_bfloat16_can_be_named_and_raises_when_used(use):
    dtypes_by_name = {"float32": mg.float32, "bfloat16": mg.bfloat16, "float16": mg.float16}
    assert dtypes_by_name["bfloat16"].is_floating_point and mg.bfloat16 != mg.float16
    assert not mg.cuda.is_bf16_supported()  # so that scripts pick float16
    with pytest.raises(TypeError, match="bfloat16.*float16.*float32"):
        use()


# ----------------------------------------------------------------------------- attributes


@pytest.mark.parametrize("owner, name, fragment", [
    (mg, "concatenat", "did you mean 'concatenate'"),
    (mg, "uint16", "mg.int32"),
    (mg, "as_tensor", "mg.tensor"),
    (mg, "hstack", "mg.cat"),
    (F, "relu6", "clamp"),
    (F, "sofmax", "did you mean 'softmax'"),
    (mg.zeros(1), "new_zeros", "mg.zeros"),
    (mg.zeros(1), "element_size", "itemsize"),
    (mg.zeros(1), "exp_", "x.copy_(x.exp(...))"),
    (mg.zeros(1), "bfloat16", "half"),
])
def test_missing_names_say_what_minigrad_has(owner, name, fragment):
    with pytest.raises(AttributeError) as caught:
        getattr(owner, name)
    assert fragment in str(caught.value) and repr(name) in str(caught.value)
    assert not hasattr(owner, name)


def test_torch_aliases_exist():
    x = mg.arange(4.0)
    assert mg.concat([x, x]).shape == (8,) == mg.concatenate([x, x], 0).shape
    assert mg.clip is mg.clamp and mg.Tensor.clip is mg.clamp


def test_tensor_hints_cost_nothing_and_hide_nothing():
    """No __getattr__ on Tensor (it would slow every attribute read); the hint names are
    properties, absent from dir(), never shadowing a real method."""
    assert not any("__getattr__" in vars(cls) for cls in mg.Tensor.__mro__)
    x = mg.zeros(1)
    for name in list(suggest.TENSOR_NEAR) + list(suggest.MISSING_INPLACE):
        assert not hasattr(x, name) and name not in dir(x), name
    assert "add_" in dir(x) and "reshape" in dir(x)


def test_misspelt_tensor_attributes_get_pythons_suggestion():
    script = "import minigrad as mg; mg.zeros(1).numpy_"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert "Did you mean: 'numpy'?" in result.stderr


def test_an_error_inside_a_property_surfaces(monkeypatch):
    monkeypatch.setattr(mg.Tensor, "broken", property(lambda self: self.array.no_such_thing),
                        raising=False)
    with pytest.raises(AttributeError, match="no_such_thing"):
        getattr(mg.zeros(1), "broken")  # noqa: B009


def test_private_and_dunder_misses_stay_plain_and_fast():
    x = mg.zeros(1)
    for name in ("_private_probe", "__array_interface__", "__missing_dunder__"):
        with pytest.raises(AttributeError) as caught:
            getattr(x, name)
        assert "did you mean" not in str(caught.value)
    assert np.asarray(x).shape == (1,)


def test_submodules_still_import_through_the_module_getattr():
    from minigrad import serialization  # noqa: F401  (a submodule, not an attribute miss)
    from minigrad.nn import functional  # noqa: F401


def test_no_hint_hides_or_describes_a_name_minigrad_has():
    # a hint is only for a missing name: once minigrad has it, the hint must go
    from minigrad import suggest

    for owner, near in ((mg, suggest.MODULE_NEAR), (F, suggest.FUNCTIONAL_NEAR)):
        real = set(vars(owner))
        assert not real & set(near), sorted(real & set(near))
    tensor_names = {name for klass in mg.Tensor.__mro__ for name, value in vars(klass).items()
                    if not (isinstance(value, property) and name in suggest.TENSOR_NEAR)}
    shadowed = tensor_names & set(suggest.TENSOR_NEAR)
    assert not shadowed, sorted(shadowed)
