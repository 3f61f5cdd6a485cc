"""Every op family on the GPU against the CPU: forward values and the gradients of a
weighted sum (float32), a second derivative, and the in-place updates. Without CUDA the
tests skip with the reason, unless MINIGRAD_FAKE_GPU=1 runs them on the CuPy stand-in."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import requires_cuda

import minigrad as mg
import minigrad.nn.functional as F

RNG = np.random.default_rng(7)


def _normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _positive(*shape):
    return RNG.uniform(0.5, 2.0, shape).astype(np.float32)


# (name, function of tensors, input arrays); float inputs require grad
OP_CASES = [
    ("add", lambda a, b: a + b, [_normal(3, 4), _normal(4)]),
    ("sub_scalar", lambda a: 2.0 - a, [_normal(3, 4)]),
    ("mul", lambda a, b: a * b, [_normal(3, 1), _normal(1, 4)]),
    ("div", lambda a, b: a / b, [_normal(3, 4), _positive(3, 4)]),
    ("pow", lambda a, b: a**b, [_positive(3, 4), _normal(3, 4)]),
    ("pow_scalar", lambda a: a**3, [_normal(3, 4)]),
    ("neg", lambda a: -a, [_normal(5)]),
    ("exp", lambda a: a.exp(), [_normal(3, 4)]),
    ("log", lambda a: a.log(), [_positive(3, 4)]),
    ("sqrt", lambda a: a.sqrt(), [_positive(3, 4)]),
    ("rsqrt", lambda a: a.rsqrt(), [_positive(3, 4)]),
    ("abs", lambda a: a.abs(), [_positive(3, 4) * np.sign(_normal(3, 4))]),
    ("tanh", lambda a: a.tanh(), [_normal(3, 4)]),
    ("sigmoid", lambda a: a.sigmoid(), [_normal(3, 4) * 10]),
    ("relu", lambda a: a.relu(), [_positive(3, 4) * np.sign(_normal(3, 4))]),
    ("gelu", lambda a: a.gelu(), [_normal(3, 4)]),
    ("gelu_tanh", lambda a: a.gelu("tanh"), [_normal(3, 4)]),
    ("erf", lambda a: mg.erf(a), [_normal(3, 4)]),
    ("clamp", lambda a: a.clamp(-0.5, 0.5), [_normal(3, 4)]),
    ("sum", lambda a: a.sum(1, keepdim=True), [_normal(3, 4)]),
    ("mean", lambda a: a.mean((0, 2)), [_normal(2, 3, 4)]),
    ("max_dim", lambda a: a.max(1).values, [_normal(3, 4)]),
    ("min_all", lambda a: a.min(), [_normal(3, 4)]),
    ("argmax", lambda a: a.argmax(-1), [_normal(3, 4)]),
    ("var", lambda a: a.var(0), [_normal(5, 3)]),
    ("std", lambda a: a.std(), [_normal(5, 3)]),
    ("logsumexp", lambda a: a.logsumexp(-1), [_normal(3, 4)]),
    ("reshape_permute", lambda a: a.reshape(4, 6).permute(1, 0) * 1.0, [_normal(2, 3, 4)]),
    ("transpose_contiguous", lambda a: a.transpose(0, 2).contiguous(), [_normal(2, 3, 4)]),
    ("expand", lambda a: a.expand(3, 4, 5), [_normal(4, 1)]),
    ("squeeze_flatten", lambda a: a.unsqueeze(0).squeeze(0).flatten(), [_normal(2, 3)]),
    ("cat", lambda a, b: mg.cat([a, b], dim=1), [_normal(2, 3), _normal(2, 2)]),
    ("stack", lambda a, b: mg.stack([a, b], dim=-1), [_normal(2, 3), _normal(2, 3)]),
    ("split", lambda a: a.split(2, dim=1)[1] * 2, [_normal(2, 5)]),
    ("chunk", lambda a: a.chunk(2)[0], [_normal(4, 3)]),
    ("slice", lambda a: a[1:, ::2], [_normal(3, 5)]),
    ("gather_repeats", lambda a: a[mg.tensor([0, 2, 0, 0], device=a.device)], [_normal(3, 4)]),
    ("bool_mask", lambda a: a[a > 0], [_normal(3, 4)]),
    ("where", lambda a, b: mg.where(a > b, a, b), [_normal(3, 4), _normal(3, 4)]),
    ("masked_fill", lambda a: a.masked_fill(a < 0, -1.0), [_normal(3, 4)]),
    ("maximum", lambda a, b: mg.maximum(a, b), [_normal(3, 4), _normal(3, 4)]),
    ("minimum", lambda a, b: mg.minimum(a, b), [_normal(3, 4), _normal(3, 4)]),
    ("triu_tril", lambda a: mg.triu(a, 1) + mg.tril(a, -1), [_normal(4, 4)]),
    ("softmax", lambda a: a.softmax(-1), [_normal(3, 5)]),
    ("softmax_dim0", lambda a: a.softmax(0), [_normal(3, 5)]),
    ("log_softmax", lambda a: a.log_softmax(-1), [_normal(3, 5)]),
    ("matmul", lambda a, b: a @ b, [_normal(3, 4), _normal(4, 5)]),
    ("matmul_batched", lambda a, b: a @ b, [_normal(2, 1, 3, 4), _normal(3, 4, 2)]),
    ("matmul_vector", lambda a, b: a @ b, [_normal(4), _normal(4, 3)]),
    ("to_float64", lambda a: a.to(mg.float64) * 2, [_normal(3)]),
    ("compare_long", lambda a: (a > 0).long() + a.long(), [_normal(3, 4) * 3]),
    ("linear", lambda x, w, b: F.linear(x, w, b), [_normal(2, 3), _normal(4, 3), _normal(4)]),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), [_normal(3, 4), _normal(4),
                                                                 _normal(4)]),
    ("embedding", lambda w: F.embedding(mg.tensor([[0, 2], [2, 1]], device=w.device), w),
     [_normal(3, 4)]),
    ("cross_entropy", lambda x: F.cross_entropy(
        x, mg.tensor([1, 0, -100, 3], device=x.device), label_smoothing=0.1), [_normal(4, 5)]),
    ("mse_loss", lambda a, b: F.mse_loss(a, b), [_normal(3, 4), _normal(3, 4)]),
    ("attention", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     [_normal(2, 3, 4), _normal(2, 3, 4), _normal(2, 3, 4)]),
    ("dropout_eval", lambda a: F.dropout(a, 0.5, training=False), [_normal(3, 4)]),
]


def _run_case(function, arrays, device):
    inputs = [mg.tensor(a, device=device, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = function(*inputs)
    weights = None
    if out.requires_grad:
        # weighted, not a plain sum: the sum of softmax or layer norm is constant
        weights = np.random.default_rng(3).standard_normal(out.shape).astype(np.float32)
        (out * mg.tensor(weights, device=device)).sum().backward()
    return out, [t.grad for t in inputs]


@requires_cuda
@pytest.mark.parametrize("name, function, arrays", OP_CASES, ids=[c[0] for c in OP_CASES])
def test_op_on_gpu_matches_cpu(name, function, arrays):
    out_cpu, grads_cpu = _run_case(function, arrays, "cpu")
    out_gpu, grads_gpu = _run_case(function, arrays, "gpu")
    assert out_gpu.device == "gpu" and out_gpu.dtype is out_cpu.dtype
    np.testing.assert_allclose(out_gpu.numpy(), out_cpu.numpy(), rtol=1e-5, atol=1e-5)
    for grad_cpu, grad_gpu in zip(grads_cpu, grads_gpu):
        assert (grad_cpu is None) == (grad_gpu is None)
        if grad_gpu is not None:
            assert grad_gpu.device == "gpu"
            np.testing.assert_allclose(grad_gpu.numpy(), grad_cpu.numpy(), rtol=1e-4,
                                       atol=1e-5)


@requires_cuda
def test_second_derivative_on_gpu_matches_cpu():
    values, results = _normal(2, 5), []
    for device in ("cpu", "gpu"):
        x = mg.tensor(values, device=device, requires_grad=True)
        weights = mg.tensor(np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5),
                            device=device)
        (grad,) = mg.autograd.grad((x.softmax(-1) * weights).sum(), x, create_graph=True)
        (grad * grad).sum().backward()
        results.append(x.grad.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-4, atol=1e-6)


@requires_cuda
def test_in_place_updates_on_gpu():
    x = mg.zeros(2, 3, device="gpu")
    with mg.no_grad():
        x.add_(1.0).mul_(3.0).sub_(mg.ones(3, device="gpu"))
        x[0, 1] = 10.0
        x.masked_fill_(x > 5, -1.0)
        x.clamp_(min=0.0)
    np.testing.assert_array_equal(x.numpy(), [[2.0, 0.0, 2.0], [2.0, 2.0, 2.0]])
    mg.manual_seed(0)
    x.normal_()
    x.uniform_(-1, 1)
    assert x.device == "gpu" and (x.numpy() >= -1).all()

