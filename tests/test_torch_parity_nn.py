"""nn, functional and optim against PyTorch: same weights, same inputs, same outputs and
gradients (float64 unless stated), and 100 optimizer steps within float32 rounding."""
import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn, optim

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _pair(array, requires_grad=True):
    """The same float data as a minigrad tensor and a torch tensor."""
    ours = mg.tensor(array, requires_grad=requires_grad)
    theirs = torch.tensor(array, requires_grad=requires_grad)
    return ours, theirs


def _close(ours, theirs, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


def _backward_both(out, out_t, rng):
    """Backpropagate the same random upstream gradient through both outputs."""
    upstream = rng.standard_normal(out.shape)
    out.backward(mg.tensor(upstream, dtype=out.dtype))
    out_t.backward(torch.tensor(upstream, dtype=out_t.dtype))


def test_linear_matches_torch():
    rng = np.random.default_rng(0)
    layer = nn.Linear(5, 3).double()
    reference = torch.nn.Linear(5, 3).double()
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(layer.weight.numpy()))
        reference.bias.copy_(torch.tensor(layer.bias.numpy()))
    x, x_t = _pair(rng.standard_normal((2, 4, 5)))
    out, out_t = layer(x), reference(x_t)
    _close(out, out_t)
    _backward_both(out, out_t, rng)
    _close(x.grad, x_t.grad)
    _close(layer.weight.grad, reference.weight.grad)
    _close(layer.bias.grad, reference.bias.grad)


def test_linear_init_range_is_torchs():
    mg.manual_seed(0)
    layer = nn.Linear(64, 32)
    bound = 1 / np.sqrt(64)
    for param in (layer.weight, layer.bias):
        values = param.numpy()
        assert values.min() >= -bound and values.max() <= bound
    # 2048 uniform draws fill the range; the 32 of the bias need not come this close
    weight = layer.weight.numpy()
    assert weight.max() > 0.9 * bound and weight.min() < -0.9 * bound


def test_embedding_with_padding_matches_torch():
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((6, 4))
    ids = np.array([[0, 2, 2], [5, 0, 1]])
    w, w_t = _pair(weight)
    out = F.embedding(mg.tensor(ids), w, padding_idx=2)
    out_t = TF.embedding(torch.tensor(ids), w_t, padding_idx=2)
    _close(out, out_t)
    _backward_both(out, out_t, rng)
    _close(w.grad, w_t.grad)
    assert np.all(w.grad.numpy()[2] == 0)


@pytest.mark.parametrize("shape, normalized", [((3, 5), (5,)), ((2, 3, 4), (3, 4))])
def test_layer_norm_matches_torch(shape, normalized):
    rng = np.random.default_rng(2)
    x, x_t = _pair(rng.standard_normal(shape) * 3 + 1)
    w, w_t = _pair(rng.standard_normal(normalized))
    b, b_t = _pair(rng.standard_normal(normalized))
    out = F.layer_norm(x, normalized, w, b, eps=1e-5)
    out_t = TF.layer_norm(x_t, normalized, w_t, b_t, eps=1e-5)
    _close(out, out_t, rtol=1e-6, atol=1e-8)
    _backward_both(out, out_t, rng)
    for ours, theirs in ((x, x_t), (w, w_t), (b, b_t)):
        _close(ours.grad, theirs.grad, rtol=1e-6, atol=1e-8)


def test_layer_norm_float32_close_to_torch():
    rng = np.random.default_rng(3)
    data = (rng.standard_normal((4, 16)) * 10 + 5).astype(np.float32)
    out = nn.LayerNorm(16)(mg.tensor(data))
    out_t = torch.nn.LayerNorm(16)(torch.tensor(data))
    _close(out, out_t, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, ours, theirs", [
    ("relu", F.relu, TF.relu),
    ("gelu", F.gelu, TF.gelu),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: TF.gelu(x, approximate="tanh")),
    ("softmax", lambda x: F.softmax(x, 1), lambda x: TF.softmax(x, 1)),
    ("log_softmax", lambda x: F.log_softmax(x, -1), lambda x: TF.log_softmax(x, -1)),
])
def test_activations_match_torch(name, ours, theirs):
    rng = np.random.default_rng(4)
    x, x_t = _pair(rng.standard_normal((3, 4, 5)) * 2)
    out, out_t = ours(x), theirs(x_t)
    _close(out, out_t, rtol=1e-6, atol=1e-9)
    _backward_both(out, out_t, rng)
    _close(x.grad, x_t.grad, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(6, 5), (2, 5, 3), (5,)])
def test_cross_entropy_matches_torch(reduction, label_smoothing, weighted, shape):
    rng = np.random.default_rng(5)
    classes = shape[0] if len(shape) == 1 else shape[1]
    target_shape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    target = rng.integers(0, classes, size=target_shape)
    if target.ndim:
        target.reshape(-1)[::3] = -100  # some ignored positions
    x, x_t = _pair(rng.standard_normal(shape) * 3)
    weight = rng.uniform(0.5, 2.0, size=classes) if weighted else None
    kwargs = dict(reduction=reduction, label_smoothing=label_smoothing)
    out = F.cross_entropy(x, mg.tensor(target), None if weight is None else mg.tensor(weight),
                          **kwargs)
    out_t = TF.cross_entropy(x_t, torch.tensor(target),
                             None if weight is None else torch.tensor(weight), **kwargs)
    _close(out, out_t, rtol=1e-7, atol=1e-10)
    _backward_both(out, out_t, rng)
    _close(x.grad, x_t.grad, rtol=1e-7, atol=1e-10)


def test_cross_entropy_all_ignored_is_nan_like_torch_with_zero_grad():
    x, x_t = _pair(np.zeros((2, 3)))
    target = np.array([-100, -100])
    loss = F.cross_entropy(x, mg.tensor(target))
    loss_t = TF.cross_entropy(x_t, torch.tensor(target))
    assert np.isnan(loss.item()) and np.isnan(loss_t.item())
    loss.backward()
    assert np.all(x.grad.numpy() == 0)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_and_mse_match_torch(reduction):
    rng = np.random.default_rng(6)
    logp, logp_t = _pair(np.log(rng.dirichlet(np.ones(4), size=5)))
    target = np.array([0, 3, -100, 1, 2])
    weight = rng.uniform(0.5, 2, 4)
    out = F.nll_loss(logp, mg.tensor(target), mg.tensor(weight), reduction=reduction)
    out_t = TF.nll_loss(logp_t, torch.tensor(target), torch.tensor(weight),
                        reduction=reduction)
    _close(out, out_t)
    _backward_both(out, out_t, rng)
    _close(logp.grad, logp_t.grad)
    a, a_t = _pair(rng.standard_normal((3, 4)))
    b, b_t = _pair(rng.standard_normal((3, 4)))
    out, out_t = F.mse_loss(a, b, reduction=reduction), TF.mse_loss(a_t, b_t, reduction=reduction)
    _close(out, out_t)
    _backward_both(out, out_t, rng)
    _close(a.grad, a_t.grad)
    _close(b.grad, b_t.grad)


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal"])
def test_scaled_dot_product_attention_matches_torch(mask_kind):
    rng = np.random.default_rng(7)
    q, q_t = _pair(rng.standard_normal((2, 3, 4, 8)))
    k, k_t = _pair(rng.standard_normal((2, 3, 5, 8)))
    v, v_t = _pair(rng.standard_normal((2, 3, 5, 6)))
    mask = mask_t = None
    is_causal = mask_kind == "causal"
    if mask_kind == "bool":
        allowed = rng.random((4, 5)) > 0.3
        allowed[:, 0] = True
        mask, mask_t = mg.tensor(allowed), torch.tensor(allowed)
    elif mask_kind == "float":
        additive = rng.standard_normal((2, 1, 4, 5))
        mask, mask_t = mg.tensor(additive), torch.tensor(additive)
    out = F.scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, scale=0.3)
    out_t = TF.scaled_dot_product_attention(q_t, k_t, v_t, mask_t, is_causal=is_causal,
                                            scale=0.3)
    _close(out, out_t, rtol=1e-6, atol=1e-9)
    _backward_both(out, out_t, rng)
    for ours, theirs in ((q, q_t), (k, k_t), (v, v_t)):
        _close(ours.grad, theirs.grad, rtol=1e-6, atol=1e-9)


def test_scaled_dot_product_attention_default_scale_is_torchs():
    """Without scale=, the scores are divided by sqrt(E), E the queries' last dim."""
    rng = np.random.default_rng(8)
    q, q_t = _pair(rng.standard_normal((2, 4, 8)))
    k, k_t = _pair(rng.standard_normal((2, 5, 8)))
    v, v_t = _pair(rng.standard_normal((2, 5, 3)))
    _close(F.scaled_dot_product_attention(q, k, v),
           TF.scaled_dot_product_attention(q_t, k_t, v_t), rtol=1e-6, atol=1e-9)


def test_clip_grad_norm_matches_torch():
    rng = np.random.default_rng(8)
    grads = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    ours = [mg.nn.Parameter(mg.zeros(g.shape, dtype=mg.float64)) for g in grads]
    theirs = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
    for p, p_t, g in zip(ours, theirs, grads, strict=True):
        p.grad = mg.tensor(g)
        p_t.grad = torch.tensor(g)
    for norm_type in (2.0, float("inf")):
        total = nn.utils.clip_grad_norm_(ours, 1.5, norm_type)
        total_t = torch.nn.utils.clip_grad_norm_(theirs, 1.5, norm_type)
        _close(total, total_t)
        for p, p_t in zip(ours, theirs, strict=True):
            _close(p.grad, p_t.grad)


# ----------------------------------------------------------------------------- optimizers


def _quadratic_problem(seed=9):
    """A small least-squares problem with a few parameter tensors."""
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal((4, 3)).astype(np.float32),
            rng.standard_normal(3).astype(np.float32)]
    data = rng.standard_normal((16, 4)).astype(np.float32)
    target = rng.standard_normal((16, 3)).astype(np.float32)
    return init, data, target


@pytest.mark.parametrize("name, ours, theirs", [
    ("sgd", lambda p: optim.SGD(p, lr=0.05), lambda p: torch.optim.SGD(p, lr=0.05)),
    ("sgd_momentum", lambda p: optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1,
                                         weight_decay=0.01),
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("sgd_nesterov", lambda p: optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True,
                                         weight_decay=0.01),
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("adam", lambda p: optim.Adam(p, lr=0.01, weight_decay=0.01),
     lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=0.01)),
    ("adam_amsgrad", lambda p: optim.Adam(p, lr=0.01, betas=(0.8, 0.99), amsgrad=True),
     lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), amsgrad=True)),
    ("adamw", lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1),
     lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1)),
])
def test_100_optimizer_steps_match_torch(name, ours, theirs):
    init, data, target = _quadratic_problem()
    params = [nn.Parameter(mg.tensor(a)) for a in init]
    params_t = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    opt, opt_t = ours(params), theirs(params_t)
    x, y = mg.tensor(data), mg.tensor(target)
    x_t, y_t = torch.tensor(data), torch.tensor(target)
    for _ in range(100):
        opt.zero_grad()
        F.mse_loss(x @ params[0] + params[1], y).backward()
        opt.step()
        opt_t.zero_grad()
        TF.mse_loss(x_t @ params_t[0] + params_t[1], y_t).backward()
        opt_t.step()
    for p, p_t in zip(params, params_t, strict=True):
        _close(p, p_t, rtol=1e-5, atol=1e-6)


def test_schedulers_match_torch():
    param = [nn.Parameter(mg.zeros(1))]
    param_t = [torch.nn.Parameter(torch.zeros(1))]
    pairs = [
        (lambda o: optim.lr_scheduler.LambdaLR(o, lambda e: 0.9**e),
         lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda e: 0.9**e)),
        (lambda o: optim.lr_scheduler.StepLR(o, 3, gamma=0.5),
         lambda o: torch.optim.lr_scheduler.StepLR(o, 3, gamma=0.5)),
    ]
    for ours, theirs in pairs:
        opt, opt_t = optim.SGD(param, lr=0.1), torch.optim.SGD(param_t, lr=0.1)
        scheduler, scheduler_t = ours(opt), theirs(opt_t)
        for _ in range(10):
            assert scheduler.get_last_lr() == pytest.approx(scheduler_t.get_last_lr())
            opt.step()
            opt_t.step()
            scheduler.step()
            scheduler_t.step()
