"""Graph nodes carry PyTorch's names: every Function lives in minigrad/ops, none shares a
name with a Module, and the nodes of the layers print as PyTorch prints them, first and
second order."""
import importlib
import pkgutil

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn
from minigrad.autograd.function import Function


def _subclasses(cls: type):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _import_every_module(package=mg) -> None:
    """Import every module of minigrad, so that every class it defines exists (the CuPy
    stand-in aside: a test double, not minigrad's API; and modules whose optional
    dependency, such as mpi4py, is not installed)."""
    for module in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if module.name == "minigrad.testing":
            continue
        try:
            imported = importlib.import_module(module.name)
        except ModuleNotFoundError as exc:
            if exc.name is None or exc.name.startswith("minigrad"):
                raise
            continue
        if module.ispkg:
            _import_every_module(imported)


def _minigrad_subclasses(base: type) -> set[type]:
    """Every subclass of `base` that minigrad defines."""
    _import_every_module()
    return {cls for cls in _subclasses(base) if cls.__module__.startswith("minigrad.")}


def test_every_function_lives_in_an_ops_family_module():
    """Every op is a Function in minigrad/ops; the one other Function is the node
    mg.compile puts in the eager graph for a compiled forward's backward."""
    outside = sorted(f"{cls.__module__}.{cls.__name__}" for cls in _minigrad_subclasses(Function)
                     if not cls.__module__.startswith("minigrad.ops."))
    assert outside == ["minigrad.compile.replay.CompiledFunction"]


def test_no_function_shares_a_name_with_a_module():
    modules = {cls.__name__ for cls in _minigrad_subclasses(nn.Module)}
    functions = {cls.__name__ for cls in _minigrad_subclasses(Function)}
    assert {"Linear", "Tanh", "MultiheadAttention", "LSTM"} <= modules  # the walk found them
    assert sorted(functions & modules) == []


def _arrays() -> dict:
    rng = np.random.default_rng(0)
    return {"images": rng.standard_normal((2, 2, 4, 4)), "rows": rng.standard_normal((3, 4)),
            "conv_weight": rng.standard_normal((3, 2, 2, 2)), "table": rng.standard_normal((5, 4)),
            "ids": np.array([[0, 3], [4, 3]]), "probabilities": rng.uniform(0.1, 0.9, (3, 4)),
            "weight": rng.standard_normal((3, 4)), "bias": rng.standard_normal(4)}


def _layer_outputs(lib, functional) -> dict:
    """layer -> (output, the input whose gradient's node is the second-order one), in
    minigrad or torch (`lib`), from the same arrays."""
    tensors = {name: lib.tensor(array, requires_grad=name != "ids")
               for name, array in _arrays().items()}
    images, rows, probabilities = tensors["images"], tensors["rows"], tensors["probabilities"]
    return {
        "linear": (functional.linear(rows, tensors["weight"], tensors["bias"][:3]), rows),
        "layer_norm": (functional.layer_norm(images, (4,), tensors["bias"],
                                             tensors["weight"][0]), images),
        "conv2d": (functional.conv2d(images, tensors["conv_weight"]), images),
        "max_pool2d": (functional.max_pool2d(images, 2), images),
        "avg_pool2d": (functional.avg_pool2d(images, 2), images),
        "pad": (functional.pad(images, (1, 2)), images),
        "embedding": (functional.embedding(tensors["ids"], tensors["table"]), tensors["table"]),
        "binary_cross_entropy": (functional.binary_cross_entropy(
            probabilities, probabilities.detach() * 0.5, reduction="none"), probabilities),
        "tanh": (lib.tanh(rows), rows),
        "sigmoid": (lib.sigmoid(rows), rows),
        "softmax": (functional.softmax(rows, dim=-1), rows),
        "log_softmax": (functional.log_softmax(rows, dim=-1), rows),
    }


def _node_names(lib, functional, grad, name_of) -> dict:
    """layer -> (its output's node name, its input gradient's node name or None)."""
    names = {}
    for layer, (out, source) in _layer_outputs(lib, functional).items():
        # the upstream gradient is out itself, so that the input gradient is recorded
        (first,) = grad((out * out).sum() * 0.5, source, create_graph=True)
        second = None if first.grad_fn is None else name_of(first.grad_fn)
        names[layer] = (name_of(out.grad_fn), second)
    return names


def _minigrad_node_names() -> dict:
    return _node_names(mg, F, mg.autograd.grad, lambda node: node.name)


def test_layer_nodes_carry_pytorchs_names():
    first_order = {layer: first for layer, (first, _) in _minigrad_node_names().items()}
    assert first_order == {
        "linear": "AddmmBackward0",
        "layer_norm": "NativeLayerNormBackward0",
        "conv2d": "ConvolutionBackward0",
        "max_pool2d": "MaxPool2DWithIndicesBackward0",
        "avg_pool2d": "AvgPool2DBackward0",
        "pad": "ConstantPadNdBackward0",
        "embedding": "EmbeddingBackward0",
        "binary_cross_entropy": "BinaryCrossEntropyBackward0",
        "tanh": "TanhBackward0",
        "sigmoid": "SigmoidBackward0",
        "softmax": "SoftmaxBackward0",
        "log_softmax": "LogSoftmaxBackward0",
    }


def test_layer_nodes_match_pytorchs_first_and_second_order():
    torch = pytest.importorskip("torch")
    theirs = _node_names(torch, torch.nn.functional, torch.autograd.grad,
                         lambda node: node.name())
    ours = _minigrad_node_names()
    assert {layer: first for layer, (first, _) in ours.items()} == \
        {layer: first for layer, (first, _) in theirs.items()}
    # the node of the input gradient: PyTorch's second-order node where minigrad, like
    # PyTorch, computes that gradient in one node of its own
    for layer in ("layer_norm", "conv2d", "max_pool2d", "avg_pool2d"):
        assert ours[layer][1] == theirs[layer][1], layer
