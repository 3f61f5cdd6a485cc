"""Module API: forward hooks and pre-hooks (return values, order, removal, kwargs,
always_call), traversal (named_modules with memo/prefix/remove_duplicate, named_children,
named_buffers, apply), path lookups, registration rules, requires_grad_ and repr, each
compared with PyTorch's where it has the same call."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def _torch():
    """torch for the comparisons; only those tests skip without it."""
    return pytest.importorskip("torch")


class Block(nn.Module):
    """A block with a parameter, a buffer, a shared child and keyword arguments."""

    def __init__(self, shared: nn.Module) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 3)
        self.shared = shared
        self.register_buffer("scale", mg.full((3,), 2.0))

    def forward(self, x, shift=0.0):
        return self.shared(self.proj(x)) * self.scale + shift


def _model():
    shared = nn.Tanh()
    return nn.Sequential(Block(shared), nn.ReLU(), Block(shared))


# ----------------------------------------------------------------------------- hooks


def test_forward_hook_sees_module_args_and_output_and_can_replace_the_output():
    layer = nn.Linear(3, 2)
    x = mg.randn(4, 3)
    seen = []
    handle = layer.register_forward_hook(lambda m, args, out: seen.append((m, args, out)))
    out = layer(x)
    assert seen[0][0] is layer and seen[0][1] == (x,) and seen[0][2] is out
    replace = layer.register_forward_hook(lambda m, args, out: out * 0)
    assert np.all(layer(x).numpy() == 0)
    handle.remove()
    replace.remove()
    replace.remove()  # removing twice is harmless
    assert len(seen) == 2 and np.any(layer(x).numpy() != 0)
    assert not layer._forward_hooks


def test_pre_hook_can_replace_the_arguments():
    layer = nn.Identity()
    with layer.register_forward_pre_hook(lambda m, args: args[0] + 1):  # one value: a 1-tuple
        assert layer(mg.tensor(1.0)).item() == 2.0
    assert layer(mg.tensor(1.0)).item() == 1.0  # removed on leaving the with block
    layer.register_forward_pre_hook(lambda m, args: (args[0] * 10,))
    assert layer(mg.tensor(1.0)).item() == 10.0


def test_hooks_run_in_order_prepend_first():
    order = []
    layer = nn.ReLU()
    layer.register_forward_hook(lambda *a: order.append("second"))
    layer.register_forward_hook(lambda *a: order.append("first"), prepend=True)
    layer.register_forward_pre_hook(lambda *a: order.append("pre"))
    layer.register_forward_hook(lambda *a: order.append("third"))
    layer(mg.zeros(1))
    assert order == ["pre", "first", "second", "third"]


def test_hooks_with_kwargs():
    block = Block(nn.Identity())
    x = mg.ones(1, 3)

    def pre_hook(module, args, kwargs):
        return args, {**kwargs, "shift": 100.0}

    def hook(module, args, kwargs, output):
        assert kwargs == {"shift": 100.0}
        return output - kwargs["shift"]

    plain = block(x, shift=0.0).numpy()
    block.register_forward_pre_hook(pre_hook, with_kwargs=True)
    block.register_forward_hook(hook, with_kwargs=True)
    np.testing.assert_allclose(block(x, shift=5.0).numpy(), plain, atol=1e-5)
    block.register_forward_pre_hook(lambda m, a, k: a, with_kwargs=True)
    with pytest.raises(RuntimeError, match="must return None or \\(args, kwargs\\)"):
        block(x)


def test_always_call_hooks_run_when_forward_raises():
    class Broken(nn.Module):
        def forward(self, x):
            raise ValueError("broken forward")

    seen = []
    module = Broken()
    module.register_forward_hook(lambda m, a, out: seen.append(("always", out)),
                                 always_call=True)
    module.register_forward_hook(lambda m, a, out: seen.append(("normal", out)))
    with pytest.raises(ValueError, match="broken forward"):
        module(mg.zeros(1))
    assert seen == [("always", None)]


def test_hooks_on_submodules_capture_activations_by_name():
    model = _model()
    captured = {}
    handles = [module.register_forward_hook(
        lambda m, args, out, name=name: captured.setdefault(name, out))
        for name, module in model.named_modules() if isinstance(module, nn.Linear)]
    out = model(mg.randn(2, 3))
    assert sorted(captured) == ["0.proj", "2.proj"]
    assert captured["2.proj"].shape == (2, 3) and out.shape == (2, 3)
    for handle in handles:
        handle.remove()
    assert all(not m._forward_hooks for m in model.modules())


def test_non_callable_hook_is_rejected():
    with pytest.raises(TypeError, match="hook must be callable"):
        nn.ReLU().register_forward_hook("print")


def test_hooks_match_torch_on_the_same_calls():
    torch = _torch()
    results = {}
    for lib, tensor in ((nn, mg.tensor), (torch.nn, torch.tensor)):
        layer = lib.Linear(2, 2, bias=False)
        log = []
        layer.register_forward_pre_hook(lambda m, args, log=log: log.append(len(args)))
        layer.register_forward_hook(lambda m, args, out, log=log: log.append(tuple(out.shape)))
        handle = layer.register_forward_hook(lambda m, args, out: out.sum())
        total = layer(tensor([[1.0, 2.0]]))
        handle.remove()
        log.append(tuple(total.shape))
        results[lib] = log
    assert results[nn] == results[torch.nn] == [1, (1, 2), ()]


# ----------------------------------------------------------------------------- traversal


def _structure(lib):
    """The same nesting in either library: a shared module and a shared parameter."""
    shared = lib.Linear(2, 2)
    inner = lib.Sequential(shared, lib.Tanh())
    model = lib.Sequential(inner, shared, lib.Sequential(lib.ReLU(), inner))
    model.register_buffer("steps", (mg.zeros if lib is nn else _torch().zeros)(1))
    return model


def test_traversal_names_match_torch():
    torch = _torch()
    ours, theirs = _structure(nn), _structure(torch.nn)
    calls = [
        lambda m: [n for n, _ in m.named_modules()],
        lambda m: [n for n, _ in m.named_modules(prefix="model")],
        lambda m: [n for n, _ in m.named_modules(remove_duplicate=False)],
        lambda m: [n for n, _ in m.named_children()],
        lambda m: [n for n, _ in m.named_parameters()],
        lambda m: [n for n, _ in m.named_parameters(remove_duplicate=False)],
        lambda m: [n for n, _ in m.named_parameters(prefix="p", recurse=False)],
        lambda m: [n for n, _ in m.named_buffers()],
        lambda m: [type(x).__name__ for x in m.modules()],
        lambda m: [type(x).__name__ for x in m.children()],
    ]
    for call in calls:
        assert call(ours) == call(theirs)


def test_named_modules_memo_skips_modules_already_seen():
    model = _structure(nn)
    inner = model[0]
    names = [n for n, _ in model.named_modules(memo={inner})]
    assert names == ["", "1", "2", "2.0"]


def test_apply_visits_children_first_as_torch_does():
    torch = _torch()
    ours, theirs = [], []
    _structure(nn).apply(lambda m: ours.append(type(m).__name__))
    _structure(torch.nn).apply(lambda m: theirs.append(type(m).__name__))
    assert ours == theirs
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))

    def zero_biases(module):
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)

    assert model.apply(zero_biases) is model
    assert all(np.all(m.bias.numpy() == 0) for m in model if isinstance(m, nn.Linear))


def test_get_submodule_parameter_and_buffer():
    model = _model()
    assert model.get_submodule("") is model
    assert model.get_submodule("0.proj") is model[0].proj
    assert model.get_parameter("2.proj.weight") is model[2].proj.weight
    assert model.get_buffer("0.scale") is model[0].scale
    with pytest.raises(AttributeError, match=r"get_submodule\('0.nope'\): Block has no "
                                             r"attribute 'nope'"):
        model.get_submodule("0.nope")
    with pytest.raises(AttributeError, match="'scale' is a Tensor, not a Module"):
        model.get_submodule("0.scale")
    with pytest.raises(AttributeError, match="'scale' is not a parameter of Block"):
        model.get_parameter("0.scale")
    with pytest.raises(AttributeError, match="'proj' is not a buffer of Block"):
        model.get_buffer("0.proj")


# ----------------------------------------------------------------------------- registration


def test_add_module_and_register_module_follow_torchs_rules():
    module = nn.Module()
    module.add_module("first", nn.ReLU())
    module.register_module("second", None)
    assert list(module._modules) == ["first", "second"]
    module.add_module("first", nn.Tanh())  # re-registering a child replaces it
    assert isinstance(module.first, nn.Tanh)
    module.value = 3
    bad_calls = [
        (lambda: module.add_module("a.b", nn.ReLU()), KeyError, "contain no '.'"),
        (lambda: module.add_module("", nn.ReLU()), KeyError, "non-empty"),
        (lambda: module.add_module(3, nn.ReLU()), TypeError, "name must be a string"),
        (lambda: module.add_module("value", nn.ReLU()), KeyError, "'value' already exists"),
        (lambda: module.add_module("x", mg.zeros(1)), TypeError, "must be a Module or None"),
        (lambda: module.register_buffer("first", mg.zeros(1)), KeyError, "already exists"),
        (lambda: module.register_parameter("train", None), KeyError, "already exists"),
    ]
    for call, error, message in bad_calls:
        with pytest.raises(error, match=message):
            call()


def test_requires_grad_freezes_and_unfreezes():
    model = _model()
    assert model.requires_grad_(False) is model
    assert not any(p.requires_grad for p in model.parameters())
    model[0].requires_grad_()
    assert [n for n, p in model.named_parameters() if p.requires_grad] == \
        ["0.proj.weight", "0.proj.bias"]


def test_repr_matches_torch_for_nested_modules():
    torch = _torch()

    def build(lib):
        return lib.Sequential(
            lib.Linear(3, 4), lib.LeakyReLU(0.2), lib.Sequential(lib.Dropout(0.1), lib.SiLU()),
            lib.Softmax(dim=-1), lib.Identity(), lib.CrossEntropyLoss(), lib.Embedding(5, 2))

    assert repr(build(nn)) == repr(build(torch.nn))

    class TwoLines(nn.Module):
        def extra_repr(self):
            return "first\nsecond"

    assert repr(TwoLines()) == "TwoLines(\n  first\n  second\n)"


def test_replacing_a_registered_entry_keeps_its_place():
    layers = nn.ModuleList([nn.Linear(1, 1), nn.ReLU(), nn.Tanh()])
    layers[0] = nn.Sigmoid()
    assert [type(m).__name__ for m in layers] == ["Sigmoid", "ReLU", "Tanh"]
    sequential = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Tanh())
    sequential[-2] = nn.GELU()
    sequential.add_module("0", nn.Identity())
    assert [type(m).__name__ for m in sequential] == ["Identity", "GELU", "Tanh"]
    linear = nn.Linear(2, 2)
    linear.weight = nn.Parameter(mg.ones(2, 2))
    linear.register_parameter("weight", nn.Parameter(mg.zeros(2, 2)))
    assert list(dict(linear.named_parameters())) == ["weight", "bias"]
    norm = nn.BatchNorm1d(3)
    norm.register_buffer("running_mean", mg.ones(3))
    assert list(dict(norm.named_buffers()))[0] == "running_mean"
