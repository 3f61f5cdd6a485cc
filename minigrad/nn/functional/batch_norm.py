"""Batch normalisation (PyTorch's F.batch_norm), composed of differentiable tensor ops,
so its gradients to any order come from theirs."""
from __future__ import annotations

from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd import no_grad
from minigrad.nn.functional.window_args import describe
from minigrad.tensor import Tensor


@autocast_op("batch_norm")
def batch_norm(input: Tensor, running_mean: Tensor | None,  # noqa: A002
               running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) of input (N, C, *) over every other dim, then scale
    by weight (C,) and shift by bias (C,):

        out = (x - mean) / sqrt(var + eps) * weight + bias

    training=True: mean and var are the batch's (var biased, dividing by n, the number
    of values per channel); the running statistics, when given, are updated in place:
        running_mean = (1 - momentum) running_mean + momentum mean
        running_var  = (1 - momentum) running_var  + momentum var * n / (n - 1)
    training=False: mean and var are running_mean and running_var."""
    channels = _check(input, running_mean, running_var, weight, bias, training)
    stats_shape = (1, channels) + (1,) * (input.ndim - 2)
    if training:
        dims = (0,) + tuple(range(2, input.ndim))
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        if running_mean is not None or running_var is not None:
            count = input.numel() // channels
            _update_running(running_mean, mean, momentum, 1.0)
            _update_running(running_var, var, momentum, count / (count - 1))
        scale = (var + eps).rsqrt()
        if weight is not None:
            scale = scale * weight.reshape(stats_shape)
        out = centered * scale
        return out if bias is None else out + bias.reshape(stats_shape)
    # evaluation: the statistics are constants, so fold everything into x * scale + shift
    scale = (running_var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -running_mean * scale
    if bias is not None:
        shift = shift + bias
    return input * scale.reshape(stats_shape) + shift.reshape(stats_shape)


def _update_running(running: Tensor | None, batch_stat: Tensor, momentum: float,
                    correction: float) -> None:
    if running is None:
        return
    with no_grad():
        update = batch_stat.detach().reshape(-1) * (momentum * correction)
        running.mul_(1 - momentum).add_(update.to(running.dtype))


def _check(input: Tensor, running_mean, running_var, weight, bias,  # noqa: A002
           training: bool) -> int:
    """The number of channels, after checking every shape against it."""
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected an input (N, C, *) of at least 2 dims, got "
                         f"shape {tuple(input.shape)}")
    channels = input.shape[1]
    if training and input.numel() // max(channels, 1) <= 1:
        raise ValueError(f"batch_norm: expected more than 1 value per channel when training, "
                         f"got input of shape {tuple(input.shape)}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("batch_norm: running_mean and running_var must be given when "
                           "training=False")
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (channels,):
            raise RuntimeError(f"batch_norm: expected {name} of shape ({channels},) for input "
                               f"of shape {tuple(input.shape)}, got {tuple(t.shape)}")
        if t is not None and t.device != input.device:
            raise RuntimeError(f"batch_norm: {name} ({describe(t)}) is not on the input's "
                               f"device ({describe(input)})")
    return channels
