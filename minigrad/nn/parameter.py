"""Parameter: a leaf tensor that a Module registers as one of its weights."""
from __future__ import annotations

from minigrad.tensor import Tensor


class Parameter(Tensor):
    """A tensor that requires grad by default and is listed by Module.parameters()."""

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            data = Tensor([])
        source = data.array if isinstance(data, Tensor) else data
        super().__init__(source, requires_grad=False)
        if isinstance(data, Tensor):
            self.array = data.array  # share memory, like torch.nn.Parameter
        self.requires_grad_(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
