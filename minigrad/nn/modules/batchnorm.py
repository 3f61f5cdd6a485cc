"""BatchNorm1d and BatchNorm2d: PyTorch's modules, with the same buffers (running_mean,
running_var, num_batches_tracked), state_dict names and train/eval behaviour."""
from __future__ import annotations

from minigrad import creation, dtypes
from minigrad.autograd import no_grad
from minigrad.nn import init
from minigrad.nn.functional.batch_norm import batch_norm
from minigrad.nn.modules.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor


class _BatchNorm(Module):
    """Normalises each of num_features channels (dim 1) by batch statistics in training
    and by running statistics in evaluation (see F.batch_norm for the formulas).

    momentum: the weight of each new batch in the running averages; None makes them
    cumulative averages (weight 1 / num_batches_tracked). track_running_stats=False keeps
    no buffers and always uses the batch's statistics. affine adds weight (ones) and bias
    (zeros; bias=False leaves it out)."""

    _expected_dims: tuple[int, ...]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        num_features = creation.as_size(num_features, type(self).__name__, "num_features")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.register_parameter("weight", Parameter(
            creation.ones(num_features, dtype=dtype, device=device)) if affine else None)
        self.register_parameter("bias", Parameter(
            creation.zeros(num_features, dtype=dtype, device=device)) if affine and bias else None)
        if track_running_stats:
            self.register_buffer("running_mean",
                                 creation.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var",
                                 creation.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked",
                                 creation.tensor(0, dtype=dtypes.int64, device=device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.ndim not in self._expected_dims:
            expected = " or ".join(f"{n}D" for n in self._expected_dims)
            raise ValueError(f"{type(self).__name__}: expected {expected} input, got shape "
                             f"{tuple(input.shape)}")
        momentum = self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if momentum is None:  # a cumulative average
                momentum = 1.0 / int(self.num_batches_tracked.item())
        use_batch_stats = self.training or self.running_mean is None
        # in training without tracking, no running statistics are read or written
        tracked = not self.training or self.track_running_stats
        return batch_norm(input, self.running_mean if tracked else None,
                          self.running_var if tracked else None, self.weight, self.bias,
                          use_batch_stats, 0.0 if momentum is None else momentum, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) inputs."""

    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) inputs."""

    _expected_dims = (4,)
