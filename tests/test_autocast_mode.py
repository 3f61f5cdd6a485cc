"""mg.autocast as a mode: regions nest and switch off, belong to a thread, decorate
functions, touch only their device type, cast a parameter once per region, and hand
float32 parameters float32 gradients (the ops themselves: tests/test_autocast.py)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from helpers import make_tensor, test_device, to_numpy

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn

DEVICE_TYPE = "cuda" if test_device() == "gpu" else "cpu"
pytestmark = pytest.mark.device


def _matrices(seed: int = 0, rows: int = 3):
    rng = np.random.default_rng(seed)
    return (make_tensor(rng.normal(size=(rows, 4)), dtype="float32"),
            make_tensor(rng.normal(size=(5, 4)), dtype="float32", requires_grad=True))


def test_defaults_outside_any_region():
    x, w = _matrices()
    assert not mg.is_autocast_enabled() and not mg.is_autocast_enabled("cpu")
    assert mg.get_autocast_dtype("cpu") is mg.float16
    assert mg.get_autocast_dtype("gpu") is mg.float16
    assert F.linear(x, w).dtype is mg.float32


def test_regions_nest_and_switch_off():
    x, w = _matrices()
    with mg.autocast(DEVICE_TYPE):
        assert mg.is_autocast_enabled(DEVICE_TYPE)
        assert F.linear(x, w).dtype is mg.float16
        with mg.autocast(DEVICE_TYPE, enabled=False):
            assert not mg.is_autocast_enabled(DEVICE_TYPE)
            assert F.linear(x, w).dtype is mg.float32
            with mg.autocast(DEVICE_TYPE):
                assert F.linear(x, w).dtype is mg.float16
            assert F.linear(x, w).dtype is mg.float32
        assert F.linear(x, w).dtype is mg.float16
    assert not mg.is_autocast_enabled(DEVICE_TYPE)
    assert F.linear(x, w).dtype is mg.float32


def test_an_exception_leaves_the_region():
    x, w = _matrices()
    with pytest.raises(KeyError), mg.autocast(DEVICE_TYPE):
        raise KeyError("leaving by an exception")
    assert F.linear(x, w).dtype is mg.float32
    with mg.autocast(DEVICE_TYPE):
        with pytest.raises(RuntimeError, match="linear"):
            F.linear(x, w.T)
        assert F.linear(x, w).dtype is mg.float16  # a listed op that raised left casting on
    assert not mg.is_autocast_enabled(DEVICE_TYPE)


def test_decorator_runs_each_call_in_the_region():
    x, w = _matrices()

    @mg.autocast(DEVICE_TYPE)
    def depth_dtypes(depth: int) -> list:
        inner = depth_dtypes(depth - 1) if depth else []
        return [F.linear(x, w).dtype, *inner]

    assert depth_dtypes(2) == [mg.float16] * 3
    assert F.linear(x, w).dtype is mg.float32
    assert depth_dtypes.__name__ == "depth_dtypes"
    with pytest.raises(TypeError, match="context manager"):
        mg.autocast(DEVICE_TYPE)(None)


def test_each_thread_has_its_own_state():
    x, w = _matrices()
    step, seen = threading.Barrier(2), {}

    def other_thread():
        step.wait()  # 1: the main thread is in its region
        seen["main in a region"] = F.linear(x, w).dtype, mg.is_autocast_enabled(DEVICE_TYPE)
        step.wait()  # 2
        with mg.autocast(DEVICE_TYPE):
            step.wait()  # 3: the main thread has left its region, this one is in its own
            seen["own region"] = F.linear(x, w).dtype
            step.wait()  # 4: the main thread has looked

    thread = threading.Thread(target=other_thread)
    thread.start()
    with mg.autocast(DEVICE_TYPE):
        step.wait()  # 1
        step.wait()  # 2
        assert F.linear(x, w).dtype is mg.float16
    step.wait()  # 3
    assert F.linear(x, w).dtype is mg.float32
    step.wait()  # 4
    thread.join()
    assert seen == {"main in a region": (mg.float32, False), "own region": mg.float16}


def test_a_region_casts_only_its_device_type(gpu_or_stand_in):
    x, w = (t.detach() for t in _matrices())
    x_cpu, w_cpu, x_gpu, w_gpu = x.cpu(), w.cpu(), x.to("gpu"), w.to("gpu")
    with mg.autocast("cuda"):
        assert F.linear(x_cpu, w_cpu).dtype is mg.float32
        assert F.linear(x_gpu, w_gpu).dtype is mg.float16
    with mg.autocast("cpu"):
        assert F.linear(x_cpu, w_cpu).dtype is mg.float16
        assert F.linear(x_gpu, w_gpu).dtype is mg.float32
    assert mg.cuda.amp.autocast().device == "cuda"
    assert mg.cpu.amp.autocast().device == "cpu"
    assert mg.amp.autocast is mg.autocast


def test_cuda_region_without_cuda_warns_and_casts_nothing(without_cuda):
    with pytest.warns(UserWarning, match="CUDA is not available"):
        region = mg.autocast("cuda")
    with region:
        assert not mg.is_autocast_enabled("cuda")


def test_refused_dtypes_and_device_types():
    with pytest.raises(RuntimeError, match="no bfloat16.*mg.float16"):
        mg.autocast("cpu", dtype=mg.bfloat16)
    with pytest.warns(UserWarning, match="not supported. Disabling autocast"):
        region = mg.autocast("cpu", dtype=mg.float32)
    x, w = _matrices()
    with region:
        assert F.linear(x.cpu(), w.detach().cpu()).dtype is mg.float32
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        mg.autocast("tpu")
    with pytest.raises(ValueError, match="device_type"):
        mg.autocast(mg.Device("cpu"))


def _cast_node(out: mg.Tensor):
    """The node that cast F.linear's weight (its second input)."""
    return out.grad_fn.next_functions[1][0]


def test_a_weight_is_cast_once_per_region():
    x, w = _matrices()
    with mg.autocast(DEVICE_TYPE):
        with mg.no_grad():
            assert not F.linear(x, w).requires_grad  # a copy made under no_grad ...
        first, second = F.linear(x, w), F.linear(x * 2, w)
        assert first.requires_grad  # ... is not the one kept
        assert _cast_node(first) is _cast_node(second)
    with mg.autocast(DEVICE_TYPE):
        assert _cast_node(F.linear(x, w)) is not _cast_node(first)  # the region's own
    with mg.autocast(DEVICE_TYPE, cache_enabled=False):
        assert _cast_node(F.linear(x, w)) is not _cast_node(F.linear(x, w))
    assert mg.amp.is_autocast_cache_enabled()


def test_two_backward_passes_through_one_cached_cast():
    x, w = _matrices()
    with mg.autocast(DEVICE_TYPE):
        F.linear(x, w).float().sum().backward()
        once = to_numpy(w.grad).copy()
        F.linear(x, w).float().sum().backward()
    assert np.array_equal(to_numpy(w.grad), 2 * once)


class _Net(nn.Module):
    """linear -> layer norm -> relu -> linear: both kinds of listed op, and an unlisted one."""

    def __init__(self):
        super().__init__()
        self.hidden, self.norm, self.out = nn.Linear(6, 16), nn.LayerNorm(16), nn.Linear(16, 5)

    def forward(self, x):
        return self.out(self.norm(self.hidden(x)).relu())


def _loss_and_grads(net, loss_of):
    net.zero_grad()
    loss = loss_of(net)
    loss.backward()
    return loss, [p.grad for p in net.parameters()]


def test_gradients_flow_in_float32_to_float32_parameters():
    mg.manual_seed(0)
    net = _Net().to(test_device())
    rng = np.random.default_rng(2)
    x = make_tensor(rng.normal(size=(8, 6)), dtype="float32")
    target = make_tensor(rng.integers(0, 5, size=8))

    def in_region(net):
        with mg.autocast(DEVICE_TYPE):
            return F.cross_entropy(net(x), target)

    def cast_by_hand(net):  # what autocast does, spelled out
        hidden = F.linear(x.half(), net.hidden.weight.half(), net.hidden.bias.half())
        normed = F.layer_norm(hidden.float(), (16,), net.norm.weight, net.norm.bias)
        logits = F.linear(normed.relu().half(), net.out.weight.half(), net.out.bias.half())
        return F.cross_entropy(logits.float(), target)

    loss, grads = _loss_and_grads(net, in_region)
    by_hand_loss, by_hand = _loss_and_grads(net, cast_by_hand)
    _, exact = _loss_and_grads(net, lambda net: F.cross_entropy(net(x), target))

    assert loss.dtype is mg.float32
    assert [g.dtype for g in grads] == [mg.float32] * len(grads)
    assert to_numpy(loss) == to_numpy(by_hand_loss)
    for grad, by_hand_grad, exact_grad in zip(grads, by_hand, exact, strict=True):
        assert np.array_equal(to_numpy(grad), to_numpy(by_hand_grad))
        # float16 rounds each activation, weight and gradient it holds (u = 2^-11); along
        # this net's path a gradient passes through about 16 such roundings
        error = np.linalg.norm(to_numpy(grad) - to_numpy(exact_grad))
        assert error <= 16 * 2.0**-11 * np.linalg.norm(to_numpy(exact_grad))
        assert error > 0
