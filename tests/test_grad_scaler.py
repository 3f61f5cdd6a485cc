"""mg.amp.GradScaler step by step against torch.amp.GradScaler("cpu"), with inf and NaN
gradients planted on some steps; then its refusals, its disabled form and its state."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import make_tensor, test_device, to_numpy

import minigrad as mg
from minigrad import optim

torch = pytest.importorskip("torch")
DEVICE_TYPE = "cuda" if test_device() == "gpu" else "cpu"
pytestmark = pytest.mark.device

SHAPES = [(3, 4), (4,)]
# the gradient of parameter i at step k is coefficient * S, with these planted
PLANTED = {2: (0, (1, 2), np.inf), 3: (1, (0,), np.nan), 8: (0, (0, 0), -np.inf)}
STEPS = 12


def _coefficients(step: int) -> list[np.ndarray]:
    rng = np.random.default_rng(step)
    # below 2^-24 some, where float16 would round them to zero: what scaling is for
    arrays = [rng.normal(size=shape) * 10.0 ** rng.uniform(-9, 0, shape) for shape in SHAPES]
    if step in PLANTED:
        index, position, value = PLANTED[step]
        arrays[index][position] = value
    return [a.astype(np.float32) for a in arrays]


def _pair(**options):
    """A minigrad and a torch run of the same parameters, SGD and scaler."""
    starts = [np.random.default_rng(99).normal(size=s).astype(np.float32) for s in SHAPES]
    mg_params = [make_tensor(s, requires_grad=True) for s in starts]
    torch_params = [torch.tensor(s, requires_grad=True) for s in starts]
    return ((mg_params, optim.SGD(mg_params, lr=0.1),
             mg.amp.GradScaler(DEVICE_TYPE, **options)),
            (torch_params, torch.optim.SGD(torch_params, lr=0.1),
             torch.amp.GradScaler("cpu", **options)))


def _backward(lib, params, scaler, coefficients):
    """Gradients coefficient * S: the backward of S * sum(p * coefficient)."""
    constant = (lambda a: make_tensor(a)) if lib is mg else torch.tensor
    loss = sum((p * constant(c)).sum() for p, c in zip(params, coefficients, strict=True))
    scaler.scale(loss).backward()


@pytest.mark.parametrize("unscale_first", [False, True], ids=["step", "unscale_then_step"])
def test_matches_torch_step_by_step(unscale_first):
    runs = _pair(init_scale=2.0**10, growth_interval=3, growth_factor=4.0, backoff_factor=0.25)
    for step in range(STEPS):
        coefficients = _coefficients(step)
        seen = []
        for lib, (params, optimizer, scaler) in zip((mg, torch), runs, strict=True):
            optimizer.zero_grad()
            _backward(lib, params, scaler, coefficients)
            if unscale_first:
                scaler.unscale_(optimizer)
                seen.append([to_numpy(p.grad) if lib is mg else p.grad.numpy()
                             for p in params])
            scaler.step(optimizer)
            scaler.update()
            seen.append(([to_numpy(p.detach()) if lib is mg else p.detach().numpy()
                          for p in params], scaler.state_dict()))
        if unscale_first:  # the unscaled gradients, inf and NaN included, bit for bit
            for mine, theirs in zip(seen[0], seen[2], strict=True):
                np.testing.assert_array_equal(mine, theirs)
            seen = seen[1::2]
        (mg_values, mg_state), (torch_values, torch_state) = seen
        assert mg_state == torch_state, step
        for mine, theirs in zip(mg_values, torch_values, strict=True):
            np.testing.assert_array_equal(mine, theirs)
    # the schedule exercised growth, backoff and skipped steps
    assert mg_state["scale"] != 2.0**10


def test_a_skipped_step_changes_nothing_and_backs_off():
    (params, optimizer, scaler), _ = _pair(init_scale=8.0)
    before = [to_numpy(p.detach()).copy() for p in params]
    _backward(mg, params, scaler, _coefficients(2))  # inf in the first parameter
    assert scaler.step(optimizer) is None
    scaler.update()
    assert all(np.array_equal(to_numpy(p.detach()), b) for p, b in zip(params, before))
    assert scaler.get_scale() == 4.0
    assert scaler._get_growth_tracker() == 0


def test_each_optimizer_skips_on_its_own_gradients():
    (params, _, scaler), _ = _pair(init_scale=8.0)
    finite, planted = optim.SGD([params[1]], lr=0.1), optim.SGD([params[0]], lr=0.1)
    start = to_numpy(params[1].detach()).copy()
    _backward(mg, params, scaler, _coefficients(2))  # inf in params[0] only
    scaler.step(finite)
    scaler.step(planted)
    scaler.update()
    assert not np.array_equal(to_numpy(params[1].detach()), start)
    assert scaler.get_scale() == 4.0  # one optimizer's inf is enough to back off


def test_misuse_raises_as_torch_does():
    (params, optimizer, scaler), _ = _pair()
    with pytest.raises(AssertionError, match="did not use scaler.scale"):
        scaler.step(optimizer)
    scaler.scale(params[0].sum())  # no backward: no gradient to check
    with pytest.raises(AssertionError, match="No inf checks were recorded for this"):
        scaler.step(optimizer)
    (params, optimizer, scaler), _ = _pair()
    _backward(mg, params, scaler, _coefficients(0))
    scaler.unscale_(optimizer)
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        scaler.unscale_(optimizer)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(optimizer, closure=lambda: None)
    scaler.step(optimizer)
    with pytest.raises(RuntimeError, match="unscale_.. is being called after step"):
        scaler.unscale_(optimizer)
    with pytest.raises(RuntimeError, match="step.. has already been called"):
        scaler.step(optimizer)
    scaler.update()
    with pytest.raises(AssertionError, match="No inf checks"):
        scaler.update()


def test_float16_gradients_are_refused():
    (params, optimizer, scaler), _ = _pair()
    scaler.scale(params[0].sum())
    params[0].grad = make_tensor(np.ones((3, 4)), dtype="float16")
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.unscale_(optimizer)


def test_bad_factors_are_refused():
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        mg.amp.GradScaler(DEVICE_TYPE, growth_factor=1.0)
    with pytest.raises(AssertionError, match="backoff factor must be < 1.0"):
        mg.amp.GradScaler(DEVICE_TYPE, backoff_factor=1.0)
    with pytest.raises(ValueError, match="init_scale must be a finite number > 0"):
        mg.amp.GradScaler(DEVICE_TYPE, init_scale=0.0)
    with pytest.raises(ValueError, match="growth_interval must be an integer >= 1"):
        mg.amp.GradScaler(DEVICE_TYPE, growth_interval=0)


def test_new_scale_is_taken_as_given():
    (params, optimizer, scaler), _ = _pair()
    scaler.scale(params[0].sum())
    scaler.update(0.1)
    assert scaler.get_scale() == float(np.float32(0.1))
    scaler.update(make_tensor(np.array([3.0]), dtype="float32"))
    assert scaler.get_scale() == 3.0
    with pytest.raises(AssertionError, match="new_scale should be"):
        scaler.update(make_tensor(np.array([1.0, 2.0]), dtype="float32"))


def test_scale_takes_tensors_in_containers():
    (params, _, scaler), _ = _pair(init_scale=4.0)
    a, b = params[1].detach(), params[1].detach() * 2
    scaled_a, (scaled_b,) = scaler.scale([a, (b,)])
    (lazily_scaled,) = list(scaler.scale(iter([a])))
    for scaled, original in ((scaled_a, a), (scaled_b, b), (lazily_scaled, a)):
        assert np.array_equal(to_numpy(scaled), 4 * to_numpy(original))
    with pytest.raises(ValueError, match="iterable of Tensors"):
        scaler.scale(3.0)


def test_disabled_is_a_pass_through():
    (params, optimizer, _), _ = _pair()
    scaler = mg.amp.GradScaler(DEVICE_TYPE, enabled=False)
    before = to_numpy(params[1].detach()).copy()
    loss = params[1].sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.unscale_(optimizer)
    scaler.step(optimizer)  # optimizer.step() on the gradient 1 as it is
    scaler.update()
    np.testing.assert_allclose(to_numpy(params[1].detach()), before - 0.1, rtol=2.0**-22)
    assert scaler.get_scale() == 1.0 and not scaler.is_enabled()
    assert scaler.state_dict() == {}
    scaler.load_state_dict({})  # nothing to load


def test_cuda_scaler_without_cuda_warns_and_disables(without_cuda):
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = mg.amp.GradScaler("cuda")
    assert not scaler.is_enabled()
    assert not mg.cuda.amp.GradScaler(enabled=False).is_enabled()
    assert mg.cpu.amp.GradScaler().is_enabled()


def test_state_dict_round_trip_continues_the_run():
    runs = [_pair(init_scale=2.0**10, growth_interval=3)[0] for _ in range(2)]
    (params, optimizer, scaler), (params2, optimizer2, resumed) = runs
    for step in range(5):
        optimizer.zero_grad()
        _backward(mg, params, scaler, _coefficients(step))
        scaler.step(optimizer)
        scaler.update()
    state = scaler.state_dict()
    assert list(state) == list(torch.amp.GradScaler("cpu").state_dict())
    resumed.load_state_dict(state)
    assert resumed.state_dict() == state
    with mg.no_grad():
        for p, p2 in zip(params, params2, strict=True):
            p2.copy_(p)
    for step in range(5, 9):
        for run_params, run_optimizer, run_scaler in ((params, optimizer, scaler),
                                                      (params2, optimizer2, resumed)):
            run_optimizer.zero_grad()
            _backward(mg, run_params, run_scaler, _coefficients(step))
            run_scaler.step(run_optimizer)
            run_scaler.update()
        assert resumed.state_dict() == scaler.state_dict()


@pytest.mark.parametrize("change, message", [
    ({"scale": -1.0}, "scale must be a finite number > 0"),
    ({"scale": float("inf")}, "scale must be a finite number > 0"),
    ({"growth_interval": 2.5}, "growth_interval must be an integer"),
    ({"_growth_tracker": 2000}, "_growth_tracker must be an integer in"),
    ({"backoff_factor": 0.0}, "backoff_factor must be a number in"),
    ({"extra": 1}, "expected the entries"),
])
def test_load_state_dict_refuses_what_state_dict_cannot_make(change, message):
    scaler = mg.amp.GradScaler(DEVICE_TYPE)
    state = {**scaler.state_dict(), **change}
    with pytest.raises(ValueError, match=message):
        scaler.load_state_dict(state)
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        scaler.load_state_dict({})
