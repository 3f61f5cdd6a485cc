"""Every public class and utility is importable where PyTorch keeps it, with "torch" read as
"minigrad": minigrad.nn.modules.linear.Linear as torch.nn.modules.linear.Linear."""
import importlib
import inspect

import pytest

# namespaces whose names PyTorch also defines in submodules of the same layout
NAMESPACES = ("nn", "nn.init", "nn.parallel", "nn.utils", "nn.utils.rnn", "optim",
              "optim.lr_scheduler", "utils.data")


@pytest.mark.parametrize("path, name, public", [
    ("nn.modules.module", "Module", "nn"),
    ("nn.modules.linear", "Linear", "nn"),
    ("nn.modules.linear", "Identity", "nn"),
    ("nn.modules.activation", "ReLU", "nn"),
    ("nn.modules.activation", "MultiheadAttention", "nn"),
    ("nn.modules.conv", "Conv2d", "nn"),
    ("nn.modules.container", "Sequential", "nn"),
    ("nn.modules.container", "ModuleList", "nn"),
    ("nn.modules.container", "ModuleDict", "nn"),
    ("nn.modules.container", "ParameterList", "nn"),
    ("nn.modules.sparse", "Embedding", "nn"),
    ("nn.modules.normalization", "LayerNorm", "nn"),
    ("nn.modules.normalization", "GroupNorm", "nn"),
    ("nn.modules.batchnorm", "BatchNorm1d", "nn"),
    ("nn.modules.dropout", "Dropout", "nn"),
    ("nn.modules.loss", "CrossEntropyLoss", "nn"),
    ("nn.modules.pooling", "MaxPool2d", "nn"),
    ("nn.modules.rnn", "LSTM", "nn"),
    ("nn.modules.rnn", "GRUCell", "nn"),
    ("nn.modules.transformer", "TransformerEncoderLayer", "nn"),
    ("nn.modules.flatten", "Flatten", "nn"),
    ("nn.parameter", "Parameter", "nn"),
    ("nn.utils.clip_grad", "clip_grad_value_", "nn.utils"),
    ("nn.utils.convert_parameters", "parameters_to_vector", "nn.utils"),
    ("utils.data.dataloader", "DataLoader", "utils.data"),
    ("utils.data.dataset", "Dataset", "utils.data"),
    ("optim.optimizer", "Optimizer", "optim"),
    ("optim.adamw", "AdamW", "optim"),
])
def test_pytorchs_module_paths_hold_minigrads_names(path, name, public):
    """minigrad.<path>.<name> is minigrad.<public>.<name>, as torch.<path>.<name> is
    torch.<public>.<name>."""
    found = getattr(importlib.import_module(f"minigrad.{path}"), name)
    assert found is getattr(importlib.import_module(f"minigrad.{public}"), name)


def _public_names(namespace: str):
    """(name, object) for the classes and functions minigrad defines that `namespace`
    exports."""
    module = importlib.import_module(f"minigrad.{namespace}")
    for name in sorted(getattr(module, "__all__", dir(module))):
        obj = getattr(module, name)
        defined_here = getattr(obj, "__module__", "").startswith("minigrad.")
        if not name.startswith("_") and defined_here and (inspect.isclass(obj)
                                                          or inspect.isfunction(obj)):
            yield name, obj


def test_every_public_name_is_where_pytorch_keeps_it():
    torch = pytest.importorskip("torch")
    compared, misplaced = set(), []
    for namespace in NAMESPACES:
        theirs_namespace = importlib.import_module(f"torch.{namespace}")
        for name, ours in _public_names(namespace):
            theirs = getattr(theirs_namespace, name, None)
            where = getattr(theirs, "__module__", None) or ""
            if not where.startswith("torch.") or "._" in where:
                continue  # minigrad's own, or PyTorch's C bindings
            path = "minigrad" + where.removeprefix("torch")
            try:
                found = getattr(importlib.import_module(path), name, None)
            except ImportError:
                found = None
            if found is not ours:
                misplaced.append(f"{namespace}.{name}: expected at {path}")
            compared.add(name)
    assert misplaced == []
    assert {"Linear", "LSTM", "DataLoader", "Adam", "StepLR", "clip_grad_norm_",
            "xavier_uniform_", "pad_sequence"} <= compared
    assert torch.nn.Linear.__module__ == "torch.nn.modules.linear"  # the premise
