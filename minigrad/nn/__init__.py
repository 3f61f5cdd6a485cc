"""minigrad.nn: modules, parameters, layers, init and functional (PyTorch's torch.nn)."""
from minigrad.nn import functional, init, parallel, utils
from minigrad.nn.activation import (
    ELU,
    GELU,
    Identity,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from minigrad.nn.batchnorm import BatchNorm1d, BatchNorm2d
from minigrad.nn.containers import ModuleDict, ModuleList, Sequential
from minigrad.nn.conv import Conv1d, Conv2d
from minigrad.nn.dropout import Dropout
from minigrad.nn.embedding import Embedding
from minigrad.nn.flatten import Flatten, Unflatten
from minigrad.nn.group_norm import GroupNorm
from minigrad.nn.linear import Linear
from minigrad.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from minigrad.nn.module import Module
from minigrad.nn.normalization import LayerNorm
from minigrad.nn.parameter import Parameter
from minigrad.nn.parameter_containers import ParameterDict, ParameterList
from minigrad.nn.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from minigrad.nn.rms_norm import RMSNorm

__all__ = [
    "ELU",
    "GELU",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "Flatten",
    "GroupNorm",
    "HuberLoss",
    "Identity",
    "KLDivLoss",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSigmoid",
    "LogSoftmax",
    "MSELoss",
    "MaxPool1d",
    "MaxPool2d",
    "Mish",
    "Module",
    "ModuleDict",
    "ModuleList",
    "NLLLoss",
    "Parameter",
    "ParameterDict",
    "ParameterList",
    "RMSNorm",
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Tanh",
    "Unflatten",
    "functional",
    "init",
    "parallel",
    "utils",
]
