"""Plain array-module reference twins of every kernel (work for numpy and cupy)."""
from minigrad.backend import array_module as _xp


def softmax(x):
    """y = exp(x - max) / sum(exp(x - max)) over the last axis; an all -inf row gives 0."""
    xp = _xp(x)
    row_max = x.max(axis=-1, keepdims=True)
    # a fully masked row has max -inf; shift by 0 instead so exp gives zeros, not NaN
    row_max = xp.where(xp.isfinite(row_max), row_max, 0)
    e = xp.exp(x - row_max)
    total = e.sum(axis=-1, keepdims=True)
    return e / xp.where(total == 0, 1, total)


def softmax_backward(y, g):
    """dx = y * (g - sum(g * y))"""
    return y * (g - (g * y).sum(axis=-1, keepdims=True))


def log_softmax(x):
    """z = x - max - log(sum(exp(x - max))); an all -inf row gives -inf (so exp(z) = 0)."""
    xp = _xp(x)
    row_max = x.max(axis=-1, keepdims=True)
    row_max = xp.where(xp.isfinite(row_max), row_max, 0)
    shifted = x - row_max
    total = xp.exp(shifted).sum(axis=-1, keepdims=True)
    # a fully masked row has total 0: keep its -inf entries instead of -inf - (-inf) = NaN
    return shifted - xp.log(xp.where(total == 0, 1, total))


def log_softmax_backward(z, g):
    """dx = g - exp(z) * sum(g)"""
    xp = _xp(z)
    return g - xp.exp(z) * g.sum(axis=-1, keepdims=True)


def matmul(a, b):
    """a @ b with numpy's batching rules."""
    if b.ndim == 2 and a.ndim > 2:
        # one BLAS call over all rows, not one per batch item (3x faster at (64,16,128))
        return (a.reshape(-1, a.shape[-1]) @ b).reshape(a.shape[:-1] + (b.shape[1],))
    return a @ b


def layer_norm(x, weight, bias, num_dims: int, eps: float):
    """(y, mean, rstd) over the last num_dims dims: rstd = 1 / sqrt(var + eps),
    y = (x - mean) * rstd * weight + bias; mean and rstd keep the normalised dims as 1."""
    xp = _xp(x)
    dims = tuple(range(-num_dims, 0))
    mean = x.mean(axis=dims, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=dims, keepdims=True)
    rstd = 1.0 / xp.sqrt(var + eps)
    out = (x - mean) * rstd
    if weight is not None:
        out *= weight
    if bias is not None:
        out += bias
    return out, mean, rstd


def layer_norm_backward(g, x, mean, rstd, weight, num_dims: int):
    """(dx, dweight, dbias): dx = rstd * (d - mean(d) - xhat * mean(d * xhat)) with
    d = g * weight, xhat = (x - mean) * rstd; dweight = sum of g * xhat and dbias = sum of
    g over the leading dims (both None without weight)."""
    xp = _xp(x)
    dims = tuple(range(-num_dims, 0))
    # the same operations as the tensor rule in LayerNorm.backward, so both agree bit for bit
    inv_count = xp.asarray(1.0 / _count(x.shape, dims), dtype=x.dtype)
    xhat = (x - mean) * rstd
    d = g * weight if weight is not None else g
    mean_d = d.sum(axis=dims, keepdims=True) * inv_count
    mean_d_xhat = (d * xhat).sum(axis=dims, keepdims=True) * inv_count
    dx = rstd * (d - mean_d - xhat * mean_d_xhat)
    if weight is None:
        return dx, None, None
    leading = tuple(range(x.ndim - num_dims))
    return dx, (g * xhat).sum(axis=leading), g.sum(axis=leading)


def _count(shape, dims) -> int:
    count = 1
    for dim in dims:
        count *= shape[dim]
    return count


def cross_entropy(x, valid, target, target_weight, class_weight, label_smoothing: float):
    """(losses, logp) for logits x (M, C): logp = log_softmax(x) and, with q the
    coefficients of `smoothed_targets`, loss_i = -sum_c q[i, c] logp[i, c]."""
    xp = _xp(x)
    logp = log_softmax(x)
    picked = logp[xp.arange(logp.shape[0]), target]
    losses = xp.where(valid, -picked, 0) * target_weight
    if label_smoothing:
        per_class = logp * class_weight if class_weight is not None else logp
        smooth = xp.where(valid, -per_class.sum(axis=-1), 0)
        losses = (1 - label_smoothing) * losses + (label_smoothing / logp.shape[1]) * smooth
    return losses.astype(logp.dtype, copy=False), logp


def cross_entropy_backward(logp, valid, target, target_weight, class_weight,
                           label_smoothing: float, scale):
    """dx = (exp(logp) * sum_c q[:, c] - q) * scale, q from `smoothed_targets`."""
    xp = _xp(logp)
    q = smoothed_targets(logp, valid, target, target_weight, class_weight, label_smoothing)
    return (xp.exp(logp) * q.sum(axis=-1, keepdims=True) - q) * scale


def smoothed_targets(x, valid, target, target_weight, class_weight, label_smoothing: float):
    """The dense cross-entropy coefficients q (M, C):
    q[i, c] = eps * w[c] / C * valid_i + [c = target_i] * (1 - eps) * target_weight_i."""
    xp = _xp(x)
    rows, classes = x.shape
    q = xp.zeros(x.shape, dtype=x.dtype)
    if label_smoothing:
        weight = class_weight if class_weight is not None else xp.ones(classes, dtype=x.dtype)
        q += (label_smoothing / classes) * weight * valid[:, None]
    q[xp.arange(rows), target] += (1 - label_smoothing) * target_weight
    return q
