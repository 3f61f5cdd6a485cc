"""ParameterList, ParameterDict, Flatten and Unflatten: registration, state_dict names as
PyTorch's (so weights port), optimisation, and errors."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def _mixture(library):
    """A model whose parameters are held in a list and a dict, in either library."""

    class Mixture(library.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scales = library.nn.ParameterList(
                [library.nn.Parameter(library.ones(3)) for _ in range(2)])
            self.offsets = library.nn.ParameterDict(
                {"a": library.nn.Parameter(library.zeros(3)),
                 "b": library.nn.Parameter(library.zeros(3))})

        def forward(self, x):
            for scale in self.scales:
                x = x * scale
            return x + self.offsets["a"] - self.offsets["b"]

    return Mixture()


def test_parameter_containers_register_their_parameters_with_pytorch_names():
    torch = pytest.importorskip("torch")

    ours, theirs = _mixture(mg), _mixture(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == [
        "scales.0", "scales.1", "offsets.a", "offsets.b"]
    assert len(list(ours.parameters())) == 4
    ours.load_state_dict({k: mg.tensor(v.numpy() + 1) for k, v in theirs.state_dict().items()})
    np.testing.assert_array_equal(ours.scales[1].numpy(), 2.0)


def test_parameter_containers_train_and_convert():
    model = _mixture(mg).double()
    assert all(p.dtype is mg.float64 for p in model.parameters())
    optimizer = mg.optim.SGD(model.parameters(), lr=0.1)
    x = mg.ones(4, 3, dtype=mg.float64)
    for _ in range(20):
        optimizer.zero_grad()
        ((model(x) - 3.0) ** 2).mean().backward()
        optimizer.step()
    assert ((model(x) - 3.0) ** 2).mean().item() < 1e-2


def test_parameter_list_behaves_like_a_list():
    params = nn.ParameterList()
    params.append(mg.zeros(2))  # a plain tensor becomes a Parameter
    params.extend([mg.ones(3), nn.Parameter(mg.ones(1))])
    assert len(params) == 3 and isinstance(params[0], nn.Parameter)
    assert params[0].requires_grad and params[-1].shape == (1,)
    params[1] = mg.full((4,), 2.0)
    assert params[1].shape == (4,) and [p.shape for p in params[1:]] == [(4,), (1,)]
    with pytest.raises(IndexError, match=r"ParameterList: index 3 is out of range for 3"):
        params[3]
    with pytest.raises(TypeError, match=r"ParameterList: expected a Parameter or Tensor, got "
                                        r"list"):
        params.append([1.0])


def test_parameter_dict_behaves_like_a_dict():
    params = nn.ParameterDict({"w": mg.zeros(2)})
    params["b"] = mg.ones(1)
    params["w"] = mg.ones(5)  # replaced in place
    assert list(params) == ["w", "b"] and "b" in params and len(params) == 2
    assert params["w"].shape == (5,)
    assert [k for k, _ in params.items()] == list(params.keys())
    removed = params.pop("w")
    assert isinstance(removed, nn.Parameter) and list(params) == ["b"]
    with pytest.raises(KeyError, match=r"ParameterDict has no parameter 'w'"):
        params["w"]
    with pytest.raises(KeyError, match=r"without '\.'"):
        params["a.b"] = mg.zeros(1)


def test_flatten_and_unflatten_match_torch():
    torch = pytest.importorskip("torch")
    array = np.arange(120.0).reshape(2, 3, 4, 5)
    for ours, theirs in [(nn.Flatten(), torch.nn.Flatten()),
                         (nn.Flatten(0, 2), torch.nn.Flatten(0, 2)),
                         (nn.Unflatten(1, (1, 3)), torch.nn.Unflatten(1, (1, 3))),
                         (nn.Unflatten(-1, (5, -1)), torch.nn.Unflatten(-1, (5, -1)))]:
        out, expected = ours(mg.tensor(array)), theirs(torch.tensor(array))
        assert out.shape == tuple(expected.shape)
        np.testing.assert_array_equal(out.numpy(), expected.numpy())
        assert repr(ours) == repr(theirs)
    with pytest.raises(RuntimeError, match=r"Unflatten: cannot split dim 1 of size 3 \(input of "
                                           r"shape \(2, 3, 4, 5\)\) into \(2, 2\)"):
        nn.Unflatten(1, (2, 2))(mg.tensor(array))
