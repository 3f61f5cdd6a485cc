"""Every misuse raises a clear exception naming the op and the shapes, dtypes or devices
involved: the tests assert on the message, not only the exception type."""
from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import make_tensor, test_device

import minigrad as mg

pytestmark = pytest.mark.device  # tensors via make_tensor follow --device


def ones(*shape, requires_grad=False):
    return make_tensor(np.ones(shape), requires_grad=requires_grad)


def raises(exception, *fragments):
    """pytest.raises that also checks each fragment appears in the message."""
    pattern = "(?s)" + "".join(f"(?=.*{re.escape(f)})" for f in fragments)
    return pytest.raises(exception, match=pattern)


# ----------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("op, name", [
    (lambda a, b: a + b, "Add"),
    (lambda a, b: a - b, "Sub"),
    (lambda a, b: a * b, "Mul"),
    (lambda a, b: a / b, "Div"),
    (lambda a, b: a**b, "Pow"),
    (mg.maximum, "Maximum"),
])
def test_broadcasting_failure_names_op_and_shapes(op, name):
    with raises(RuntimeError, name, "(2, 3)", "(4, 3)", "broadcast"):
        op(ones(2, 3), ones(4, 3))


def test_broadcasting_failure_in_where_and_comparison():
    with raises(RuntimeError, "Where", "(2, 3)", "(4, 3)"):
        mg.where(ones(2, 3) > 0, ones(2, 3), ones(4, 3))
    with raises(RuntimeError, "(2, 3)", "(4, 3)", "broadcast"):
        _ = ones(2, 3) < ones(4, 3)


def test_matmul_shape_mismatch():
    with raises(RuntimeError, "matmul", "(2, 3)", "(4, 3)", "got 3 and 4"):
        ones(2, 3) @ ones(4, 3)
    with raises(RuntimeError, "matmul", "(3,)", "(4,)"):
        mg.matmul(ones(3), ones(4))
    with raises(RuntimeError, "matmul", "(2, 3)", "(2,)"):
        ones(2, 3) @ ones(2)


def test_matmul_batch_dims_that_do_not_broadcast():
    with raises(RuntimeError, "MatMul", "(2, 3, 4)", "(5, 4, 2)"):
        ones(2, 3, 4) @ ones(5, 4, 2)


def test_matmul_of_0d_tensor():
    with raises(RuntimeError, "matmul", "at least 1 dimension", "()"):
        mg.matmul(ones(), ones(3))


def test_reshape_to_invalid_shape():
    with raises(RuntimeError, "reshape", "[4, 2]", "(2, 3)", "6 elements"):
        ones(2, 3).reshape(4, 2)
    with raises(RuntimeError, "reshape", "[-1, -1]"):
        ones(2, 3).view(-1, -1)
    with raises(RuntimeError, "reshape", "[4, -1]"):
        ones(2, 3).reshape(4, -1)


@pytest.mark.parametrize("call, op", [
    (lambda t: t.reshape(3, 2.0), "reshape"),
    (lambda t: t.expand(2.5, 3), "expand"),
    (lambda t: t.permute(1.0, 0), "permute"),
])
def test_float_sizes_are_rejected_not_truncated(call, op):
    with raises(TypeError, op, "integers", "float"):
        call(ones(2, 3))


def test_integer_like_sizes_are_accepted():
    assert ones(2, 3).reshape(np.int64(3), mg.tensor(2)).shape == (3, 2)


@pytest.mark.parametrize("call, op", [
    (lambda t: t.sum(2), "sum"),
    (lambda t: t.mean(-3), "mean"),
    (lambda t: t.softmax(3), "softmax"),
    (lambda t: t.log_softmax(-4), "log_softmax"),
    (lambda t: t.transpose(0, 5), "transpose"),
    (lambda t: t.unsqueeze(4), "unsqueeze"),
    (lambda t: t.max(2), "max"),
    (lambda t: t.var(2), "var"),
    (lambda t: mg.cat([t, t], 2), "cat"),
    (lambda t: mg.stack([t, t], 4), "stack"),
])
def test_dim_out_of_range(call, op):
    with raises(IndexError, op, "out of range", "dimensions", "expected to be in"):
        call(ones(2, 3))


def test_other_shape_errors():
    with raises(RuntimeError, "cat", "(2, 3)", "(3, 2)"):
        mg.cat([ones(2, 3), ones(3, 2)])
    with raises(RuntimeError, "stack", "(2, 3)", "(3, 2)"):
        mg.stack([ones(2, 3), ones(3, 2)])
    with raises(RuntimeError, "expand", "(2, 3)", "(4, 3)"):
        ones(2, 3).expand(4, 3)
    with raises(RuntimeError, "permute", "(2, 3)"):
        ones(2, 3).permute(0, 0)
    with raises(RuntimeError, "split", "[1, 1]", "3"):
        ones(3).split([1, 1])
    with raises(RuntimeError, "triu", "(3,)"):
        mg.triu(ones(3))


# ----------------------------------------------------------------------------- indexing


def test_indexing_out_of_range():
    with raises(IndexError, "[5]", "(3,)", "out of bounds"):
        ones(3)[5]
    with raises(IndexError, "(3, 4)", "7", "axis 1"):
        ones(3, 4)[1, 7]
    with raises(IndexError, "(3,)", "index 5"):
        ones(3)[make_tensor(np.array([0, 5]))]


def test_bool_mask_of_wrong_shape():
    with raises(IndexError, "(3,)", "boolean"):
        ones(3)[make_tensor(np.array([True, False]))]


def test_float_index_of_float_tensor():
    with raises(IndexError, "int64 or bool", "float64", "(2,)"):
        ones(3)[make_tensor(np.array([0.0, 1.0]))]
    with raises(IndexError, "(3,)", "integers"):
        ones(3)[1.0]


def test_setitem_shape_mismatch():
    with raises(IndexError, "setitem", "(2,)", "(3, 4)"):
        ones(3, 4)[0] = np.ones(2)


# ----------------------------------------------------------------------------- autograd


def test_requires_grad_on_integer_tensor():
    with raises(RuntimeError, "requires_grad", "floating point", "int64", "(2,)"):
        mg.tensor([1, 2], requires_grad=True)
    with raises(RuntimeError, "requires_grad", "int64", "(3,)"):
        mg.arange(3).requires_grad_()
    with raises(RuntimeError, "requires_grad", "bool"):
        mg.tensor([True]).requires_grad_()


def test_backward_on_non_scalar_without_gradient():
    y = ones(3, requires_grad=True) * 2
    with raises(RuntimeError, "backward", "scalar", "(3,)", "gradient"):
        y.backward()


def test_backward_gradient_of_wrong_shape():
    y = ones(3, requires_grad=True) * 2
    with raises(RuntimeError, "gradient", "(2,)", "(3,)"):
        y.backward(ones(2))


def test_backward_on_tensor_without_grad():
    with raises(RuntimeError, "does not require grad"):
        ones(3).sum().backward()


def test_backward_through_freed_graph():
    x = ones(3, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    with raises(RuntimeError, "second time", "retain_graph=True"):
        y.backward()


def test_autograd_grad_on_input_without_grad():
    x = ones(3, requires_grad=True)
    with raises(RuntimeError, "grad()", "(2,)", "does not require grad"):
        mg.autograd.grad((x * 2).sum(), [ones(2)])


def test_inplace_change_of_saved_input_is_detected_at_backward():
    x = ones(3, requires_grad=True)
    c = make_tensor(np.arange(3.0))
    y = (x * c).sum()
    c.add_(1)
    with raises(RuntimeError, "Mul", "input 1", "(3,)", "float64", "in-place", "version 1",
                "expected version 0"):
        y.backward()


def test_inplace_change_through_a_view_is_detected():
    x = ones(2, 3, requires_grad=True)
    c = make_tensor(np.arange(6.0).reshape(2, 3))
    view = c.detach()
    y = (x.exp() * c).sum()
    view.mul_(2)  # a detached alias shares the version counter
    with raises(RuntimeError, "Mul", "in-place"):
        y.backward()


def test_inplace_change_of_saved_output_is_detected():
    x = ones(3, requires_grad=True)
    y = x.exp()
    out = y.detach()
    loss = (y + 2).sum()  # Add saves nothing: only Exp's saved output is at stake
    out.zero_()
    with raises(RuntimeError, "Exp", "output", "in-place"):
        loss.backward()


def test_inplace_on_leaf_requiring_grad():
    x = ones(3, requires_grad=True)
    with raises(RuntimeError, "add_", "leaf", "(3,)", "no_grad"):
        x.add_(1)
    with raises(RuntimeError, "setitem", "(3,)"):
        x[0] = 2.0
    with mg.no_grad():
        x.add_(1)  # allowed: optimizer-style update
    np.testing.assert_allclose(x.numpy(), [2, 2, 2])


def test_inplace_with_value_of_wrong_shape():
    with raises(RuntimeError, "add_", "(3,)", "(2,)"):
        ones(3).add_(ones(2))


# ----------------------------------------------------------------------------- dtypes, devices


def test_other_argument_errors():
    with raises(TypeError, "masked_fill", "bool mask", "float64"):
        ones(2, 3).masked_fill(ones(2, 3), 0)
    with raises(ValueError, "gelu", "tanh"):
        ones(3).gelu(approximate="fast")
    with raises(ValueError, "clamp"):
        ones(3).clamp()
    with raises(RuntimeError, "mean", "int64"):
        mg.arange(3).mean()
    with raises(RuntimeError, "item", "(3,)"):
        ones(3).item()
    with raises(RuntimeError, "max", "non-empty", "(0,)"):
        make_tensor(np.zeros(0)).max()


def test_unknown_device_and_dtype():
    with raises(RuntimeError, "unknown device", "'tpu'", "cpu", "cuda", "gpu"):
        ones(3).to("tpu")
    with raises(TypeError, "complex128"):
        mg.tensor(np.ones(2, dtype=np.complex128))


@pytest.mark.usefixtures("without_cuda")
def test_gpu_without_cuda_is_a_clear_error():
    with raises(RuntimeError, "gpu", "CUDA is not available"):
        mg.ones(3, device="gpu")
    with raises(RuntimeError, "CUDA is not available"):
        ones(3).to("cuda")


@pytest.mark.skipif(not mg.backend.is_cuda_available(), reason="needs CUDA")
def test_mixing_devices_names_both():
    on_cpu = mg.ones(3)
    on_gpu = mg.ones(3, device="gpu")
    with raises(RuntimeError, "Add", "cpu", "cuda:0", "same device"):
        on_cpu + on_gpu


def test_device_switch_is_cpu_or_gpu():
    assert test_device() in ("cpu", "gpu")
