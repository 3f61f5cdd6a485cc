"""Module mechanics (registration, traversal, state dicts, to(), modes, repr) and the
layers' shapes, initialisation and behaviour. Modules that compute are moved to
MINIGRAD_TEST_DEVICE (see conftest.py) and fed tensors made there."""
import numpy as np
import pytest
from helpers import test_device

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn

pytestmark = pytest.mark.device
DEVICE = test_device()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)
        self.norm = nn.LayerNorm(3)
        self.register_buffer("running", mg.zeros(3))
        self.register_buffer("scratch", mg.ones(2), persistent=False)
        self.scale = nn.Parameter(mg.ones(1))

    def forward(self, x):
        return self.norm(self.linear(x)) * self.scale + self.running


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4, padding_idx=0)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Sequential(nn.GELU(), nn.Dropout(0.1), nn.Linear(3, 5))

    def forward(self, ids):
        return self.head(self.blocks[0](self.embed(ids)))


def test_parameters_buffers_and_modules_are_registered_in_order():
    block = Block()
    names = [name for name, _ in block.named_parameters()]
    assert names == ["scale", "linear.weight", "linear.bias", "norm.weight", "norm.bias"]
    assert [name for name, _ in block.named_buffers()] == ["running", "scratch"]
    assert [name for name, _ in block.named_modules()] == ["", "linear", "norm"]
    assert list(block.children()) == [block.linear, block.norm]
    assert block.linear.weight is block._modules["linear"]._parameters["weight"]


def test_nested_dotted_names_and_backward_through_a_model():
    model = Model().to(DEVICE)
    keys = list(model.state_dict())
    assert keys[:3] == ["embed.weight", "blocks.0.scale", "blocks.0.running"]
    assert "blocks.1.linear.weight" in keys and keys[-1] == "head.2.bias"
    model(mg.tensor([[1, 0, 3]], device=DEVICE)).sum().backward()
    assert model.blocks[0].linear.weight.grad is not None
    assert model.blocks[1].linear.weight.grad is None
    assert np.all(model.embed.weight.grad.numpy()[0] == 0)


def test_state_dict_names_order_and_non_persistent_buffers():
    block = Block().to(DEVICE)
    keys = list(block.state_dict())
    assert keys == ["scale", "running", "linear.weight", "linear.bias", "norm.weight",
                    "norm.bias"]
    value = block.state_dict()["linear.weight"]
    assert not value.requires_grad and value.array is block.linear.weight.array


def test_shared_parameters_are_listed_once():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    assert len(list(model.parameters())) == 2


def test_load_state_dict_round_trip_and_key_reports():
    source, target = Block().to(DEVICE), Block().to(DEVICE)
    result = target.load_state_dict(source.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(target.linear.weight.numpy(), source.linear.weight.numpy())
    partial = dict(source.state_dict())
    del partial["norm.bias"]
    partial["extra"] = mg.zeros(1)
    with pytest.raises(RuntimeError, match="norm.bias") as info:
        target.load_state_dict(partial)
    assert "extra" in str(info.value)
    result = target.load_state_dict(partial, strict=False)
    assert result.missing_keys == ["norm.bias"] and result.unexpected_keys == ["extra"]


def test_load_state_dict_shape_mismatch_names_key_and_both_shapes():
    target = Block()
    bad = dict(target.state_dict())
    bad["linear.weight"] = mg.zeros(5, 4)
    with pytest.raises(RuntimeError, match=r"linear\.weight.*\(5, 4\).*\(3, 4\)"):
        target.load_state_dict(bad)


def test_load_state_dict_keeps_parameter_identity_and_dtype():
    target = Block().to(DEVICE)
    weight = target.linear.weight
    state = {k: v.numpy().astype(np.float64) for k, v in Block().state_dict().items()}
    target.load_state_dict(state)
    assert target.linear.weight is weight and weight.dtype == mg.float32
    assert weight.device == DEVICE
    np.testing.assert_allclose(weight.numpy(), state["linear.weight"], rtol=1e-6)


def test_to_dtype_keeps_parameter_objects():
    block = Block().to(DEVICE)
    weight = block.linear.weight
    block.to(mg.float64)
    assert block.linear.weight is weight and weight.dtype == mg.float64
    assert block.running.dtype == mg.float64
    assert block(mg.randn(2, 4, dtype=mg.float64, device=DEVICE)).dtype == mg.float64


def test_train_eval_propagate_and_dropout_follows():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).to(DEVICE)
    model.eval()
    assert all(not m.training for m in model.modules())
    x = mg.randn(4, 3, device=DEVICE)
    np.testing.assert_array_equal(model(x).numpy(), model(x).numpy())
    model.train()
    assert all(m.training for m in model.modules())


def test_zero_grad_and_apply():
    block = Block().to(DEVICE)
    block(mg.randn(2, 4, device=DEVICE)).sum().backward()
    assert block.linear.weight.grad is not None
    block.zero_grad(set_to_none=False)
    assert np.all(block.linear.weight.grad.numpy() == 0)
    block.zero_grad()
    assert block.linear.weight.grad is None
    seen = []
    block.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "LayerNorm", "Block"]


def test_repr_is_readable():
    model = nn.Sequential(nn.Linear(2, 3), nn.GELU(approximate="tanh"),
                          nn.ModuleDict({"norm": nn.LayerNorm(3)}))
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): GELU(approximate='tanh')\n"
        "  (2): ModuleDict(\n"
        "    (norm): LayerNorm((3,), eps=1e-05, elementwise_affine=True)\n"
        "  )\n"
        ")"
    )


def test_containers():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and layers[-1] is list(layers)[2]
    layers.append(nn.ReLU())
    assert [n for n, _ in layers.named_children()] == ["0", "1", "2", "3"]
    seq = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1)).to(DEVICE)
    assert seq(mg.randn(5, 2, device=DEVICE)).shape == (5, 1)
    assert isinstance(seq[1:], nn.Sequential) and len(seq[1:]) == 2
    table = nn.ModuleDict({"a": nn.ReLU()})
    table["b"] = nn.GELU()
    assert list(table.keys()) == ["a", "b"] and "b" in table


def test_attribute_errors_and_reassignment():
    block = Block()
    with pytest.raises(AttributeError, match="nothing"):
        _ = block.nothing
    with pytest.raises(TypeError, match="scale"):
        block.scale = mg.ones(1)
    block.linear = nn.Linear(4, 3, bias=False)
    assert [n for n, _ in block.linear.named_parameters()] == ["weight"]
    assert block.linear.bias is None

    class Broken(nn.Module):
        def __init__(self):
            self.layer = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="super"):
        Broken()


def test_layer_initialisation():
    mg.manual_seed(0)
    embedding = nn.Embedding(50, 8, padding_idx=3)
    assert np.all(embedding.weight.numpy()[3] == 0)
    assert abs(embedding.weight.numpy().std() - 1) < 0.15
    norm = nn.LayerNorm((2, 3))
    assert np.all(norm.weight.numpy() == 1) and np.all(norm.bias.numpy() == 0)
    assert list(dict(nn.LayerNorm(3, elementwise_affine=False).named_parameters())) == []
    weight = mg.zeros(30, 20, device=DEVICE)
    nn.init.xavier_uniform_(weight)
    bound = np.sqrt(6 / 50)
    assert np.abs(weight.numpy()).max() <= bound and np.abs(weight.numpy()).max() > 0.9 * bound
    nn.init.constant_(weight, 0.5)
    assert np.all(weight.numpy() == 0.5)


def test_init_functions_are_seeded_and_run_on_parameters_outside_no_grad():
    mg.manual_seed(1)
    first = nn.Linear(3, 3).weight.numpy()
    mg.manual_seed(1)
    second = nn.Linear(3, 3).weight.numpy()
    np.testing.assert_array_equal(first, second)
    param = nn.Parameter(mg.zeros(2, 2, device=DEVICE))
    draws = []
    for _ in range(2):
        mg.manual_seed(2)
        nn.init.normal_(param, 0.0, 0.1)
        draws.append(param.numpy())
    np.testing.assert_array_equal(draws[0], draws[1])
    assert param.device == DEVICE and draws[0].std() > 0
    nn.init.kaiming_uniform_(param)
    nn.init.xavier_normal_(param)
    assert param.requires_grad


def test_layers_forward_shapes_and_dtypes():
    x = mg.randn(2, 5, 4, device=DEVICE)
    assert nn.Linear(4, 6).to(DEVICE)(x).shape == (2, 5, 6)
    assert nn.LayerNorm(4).to(DEVICE)(x).shape == (2, 5, 4)
    assert nn.Softmax(-1)(x).shape == (2, 5, 4)
    assert nn.ReLU()(x).shape == (2, 5, 4)
    ids = mg.tensor([[1, 2], [3, 0]], device=DEVICE)
    assert nn.Embedding(5, 7).to(DEVICE)(ids).shape == (2, 2, 7)


def test_clip_grad_norm_returns_total_and_clips():
    params = [nn.Parameter(mg.zeros(3, device=DEVICE)), nn.Parameter(mg.zeros(4, device=DEVICE))]
    params[0].grad = mg.tensor([3.0, 0.0, 0.0], device=DEVICE)
    params[1].grad = mg.tensor([0.0, 4.0, 0.0, 0.0], device=DEVICE)
    total = nn.utils.clip_grad_norm_(params, max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    clipped = np.concatenate([p.grad.numpy() for p in params])
    assert np.linalg.norm(clipped) == pytest.approx(1.0, rel=1e-5)
    small = nn.utils.clip_grad_norm_(params, max_norm=10.0)
    assert small.item() == pytest.approx(1.0, rel=1e-5)


def test_cross_entropy_all_ignored_mean_is_nan_and_does_not_crash():
    logits = mg.randn(3, 4, device=DEVICE, requires_grad=True)
    loss = F.cross_entropy(logits, mg.tensor([-100, -100, -100], device=DEVICE))
    assert np.isnan(loss.item())
    loss.backward()
    assert np.all(logits.grad.numpy() == 0)


def test_tiny_model_learns():
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2)).to(DEVICE)
    optimizer = mg.optim.Adam(model.parameters(), lr=0.05)
    x = mg.randn(64, 2, device=DEVICE)
    labels = mg.tensor((x.numpy()[:, 0] * x.numpy()[:, 1] > 0).astype(np.int64), device=DEVICE)
    for _ in range(150):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.25
