"""Loss modules: each holds its settings and calls its nn.functional twin, with
PyTorch's constructor arguments (including the deprecated size_average/reduce pair).
Class weights and pos_weight are buffers, so they move with .to() and are saved in the
state_dict, as in PyTorch."""
from __future__ import annotations

from minigrad.nn.functional import binary_loss, divergence, regression_loss
from minigrad.nn.functional import loss as classification_loss
from minigrad.nn.functional.reduction import REDUCTIONS, resolve_reduction
from minigrad.nn.modules.module import Module
from minigrad.tensor import Tensor


class _Loss(Module):
    """A loss with a reduction: "none", "mean" or "sum" (and whatever `allowed` adds)."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", allowed: tuple[str, ...] = REDUCTIONS) -> None:
        super().__init__()
        self.reduction = resolve_reduction(size_average, reduce, reduction,
                                           type(self).__name__, allowed)


class _WeightedLoss(_Loss):
    """A loss with an optional `weight` buffer."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """mean |input - target| (see F.l1_loss)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return regression_loss.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """mean (input - target)^2 (see F.mse_loss)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return regression_loss.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below beta, linear above (see F.smooth_l1_loss)."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return regression_loss.smooth_l1_loss(input, target, reduction=self.reduction,
                                              beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below delta, delta-scaled linear above (see F.huber_loss)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return regression_loss.huber_loss(input, target, reduction=self.reduction,
                                          delta=self.delta)


class KLDivLoss(_Loss):
    """KL(target || exp(input)) for log-probabilities `input` (see F.kl_div); use
    reduction="batchmean" for the divergence per sample."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction, REDUCTIONS + ("batchmean",))
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return divergence.kl_div(input, target, reduction=self.reduction,
                                 log_target=self.log_target)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities (see F.binary_cross_entropy)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return binary_loss.binary_cross_entropy(input, target, self.weight,
                                                reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits, numerically stable, with optional per-element
    `weight` and per-class `pos_weight` (see F.binary_cross_entropy_with_logits)."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return binary_loss.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of class ids under log-probabilities (see F.nll_loss)."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return classification_loss.nll_loss(input, target, self.weight,
                                            ignore_index=self.ignore_index,
                                            reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Softmax cross entropy of logits against class ids, with class weights,
    ignore_index and label smoothing (see F.cross_entropy)."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return classification_loss.cross_entropy(
            input, target, self.weight, ignore_index=self.ignore_index,
            reduction=self.reduction, label_smoothing=self.label_smoothing)
