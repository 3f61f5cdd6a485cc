"""minigrad.nn: modules, parameters, layers, init and functional (PyTorch's torch.nn)."""
from minigrad.nn import functional, init, parallel, utils
from minigrad.nn.activation import GELU, ReLU, Softmax
from minigrad.nn.containers import ModuleDict, ModuleList, Sequential
from minigrad.nn.dropout import Dropout
from minigrad.nn.embedding import Embedding
from minigrad.nn.linear import Linear
from minigrad.nn.module import Module
from minigrad.nn.normalization import LayerNorm
from minigrad.nn.parameter import Parameter

__all__ = [
    "GELU",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "Linear",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "ReLU",
    "Sequential",
    "Softmax",
    "functional",
    "init",
    "parallel",
    "utils",
]
