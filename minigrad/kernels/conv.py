"""2-D convolution on backend arrays: the forward and its two gradients, each as a fast
path (im2col and one matrix product per group) and as its reference twin (a sum over the
kernel taps). Input x (N, C, H, W), weight w (O, C / G, kh, kw), G groups, output and
upstream gradient g (N, O, Ho, Wo); xpad is x padded as the Window2d says
(minigrad/kernels/windows.py), the sums over c run over the channels of o's group, and
p = (y sh + i dh, x sw + j dw) is where tap (i, j) of output (y, x) reads:

    conv2d:       out[n, o, y, x] = b[o] + sum_{c, i, j} w[o, c, i, j] xpad[n, c, p]
    input grad:   dx = the adjoint of conv2d in x applied to g (a transposed convolution)
    weight grad:  dw[o, c, i, j] = sum_{n, y, x} g[n, o, y, x] xpad[n, c, p]

Fast path: the windows of xpad are copied once into the column matrix cols (G, K, N Ho Wo),
K = C / G * kh * kw, one strided slice per tap (measured as fast as copying an as_strided
view of xpad, and free of stride tricks); then each result is ONE batched matmul (a BLAS
gemm per group):
    conv2d:       out_g   = w_g (O/G, K) @ cols_g
    weight grad:  dw_g    = g_g (O/G, N Ho Wo) @ cols_g^T
    input grad:   dcols_g = w_g^T @ g_g, then col2im: kh kw strided adds of dcols's taps
                  into a zero (C, Hp, Wp, N) gradient of xpad, cropped to x.
Twin: the same sums as kh kw channel contractions, one per tap's strided slice.

Dispatch: MINIGRAD_KERNELS=numpy runs the twins; "auto" and "numba" run the fast path
(plain xp code too, so it runs on CuPy), which benchmarks/bench_conv.py measures faster on
every shape it times. float16 arrays are computed in float32 (as PyTorch accumulates half
precision in float) and the results cast back.
"""
from __future__ import annotations

from minigrad.backend import array_module
from minigrad.kernels.dispatch import any_half, in_float32
from minigrad.kernels.mode import get_mode
from minigrad.kernels.windows import Window2d, interior, pad, tap_slices


def conv2d(x, weight, bias, window: Window2d, groups: int):
    """out (N, O, Ho, Wo) = conv2d(x, w) + b; bias (O,) may be None."""
    if any_half(x, weight, bias):
        return in_float32(conv2d, x, weight, bias, window=window, groups=groups)
    if get_mode() == "numpy":
        return conv2d_twin(x, weight, bias, window, groups)
    xp = array_module(x)
    output_size = window.output_size(*x.shape[-2:])
    out_channels = weight.shape[0]
    cols = _columns(x, window, output_size, groups)
    out = xp.matmul(weight.reshape(groups, out_channels // groups, -1), cols)
    out = out.reshape((out_channels, x.shape[0]) + output_size)
    if bias is not None:
        out += bias.reshape(-1, 1, 1, 1)
    return xp.ascontiguousarray(out.transpose(1, 0, 2, 3))


def conv2d_input_grad(grad, weight, input_size: tuple[int, int], window: Window2d,
                      groups: int):
    """dx (N, C, H, W), (H, W) = input_size: the adjoint of conv2d in x, applied to g."""
    if any_half(grad, weight):
        return in_float32(conv2d_input_grad, grad, weight, input_size=input_size,
                          window=window, groups=groups)
    if get_mode() == "numpy":
        return conv2d_input_grad_twin(grad, weight, input_size, window, groups)
    xp = array_module(grad)
    batch, out_channels, out_h, out_w = grad.shape
    channels = weight.shape[1] * groups
    # the batch goes last, so that col2im's adds run along Wo * N neighbours, not Wo:
    # LeNet's second convolution (8 x 8 outputs) took 1.4 ms instead of 10 ms, 32 x 32
    # outputs the same time
    g = grad.transpose(1, 2, 3, 0).reshape(groups, out_channels // groups, -1)
    w = weight.reshape(groups, out_channels // groups, -1)
    dcols = xp.matmul(w.transpose(0, 2, 1), g)
    dcols = dcols.reshape((channels, window.kernel[0] * window.kernel[1], out_h, out_w, batch))
    # col2im: every tap's columns go back to the input positions that tap read
    padded = xp.zeros((channels,) + window.padded_size(*input_size) + (batch,),
                      dtype=grad.dtype)
    for tap, (_, rows, columns) in enumerate(tap_slices(window, (out_h, out_w))):
        padded[:, rows, columns] += dcols[:, tap]
    (top, _), (left, _) = window.padding
    height, width = input_size
    dx = padded[:, top:top + height, left:left + width].transpose(3, 0, 1, 2)
    return xp.ascontiguousarray(dx)


def conv2d_weight_grad(x, grad, window: Window2d, groups: int):
    """dw (O, C / G, kh, kw): the adjoint of conv2d in w, applied to g."""
    if any_half(x, grad):
        return in_float32(conv2d_weight_grad, x, grad, window=window, groups=groups)
    if get_mode() == "numpy":
        return conv2d_weight_grad_twin(x, grad, window, groups)
    xp = array_module(x)
    cols = _columns(x, window, grad.shape[2:], groups)
    dw = xp.matmul(_grad_matrix(grad, groups), cols.transpose(0, 2, 1))
    return dw.reshape((grad.shape[1], -1) + window.kernel)


def _columns(x, window: Window2d, output_size, groups: int):
    """The column matrix (G, K, N Ho Wo): cols[c, tap, n, y, x] = xpad[n, c, tap's
    (y, x)], grouped by channel."""
    xp = array_module(x)
    batch, channels = x.shape[:2]
    output_size = tuple(output_size)
    cols = xp.empty((channels, window.kernel[0] * window.kernel[1], batch) + output_size,
                    dtype=x.dtype)
    by_channel = pad(x, window).transpose(1, 0, 2, 3)
    for tap, index in enumerate(tap_slices(window, output_size)):
        cols[:, tap] = by_channel[index]
    return cols.reshape(groups, -1, batch * output_size[0] * output_size[1])


def _grad_matrix(grad, groups: int):
    """g (N, O, Ho, Wo) as (G, O/G, N Ho Wo), the layout of the column matrix."""
    batch, out_channels, out_h, out_w = grad.shape
    return grad.transpose(1, 0, 2, 3).reshape(groups, out_channels // groups,
                                              batch * out_h * out_w)


# ----------------------------------------------------------------------------- twins


def conv2d_twin(x, weight, bias, window: Window2d, groups: int):
    """conv2d as a sum over taps of channel contractions (the reference twin)."""
    xp = array_module(x)
    output_size = window.output_size(*x.shape[-2:])
    batch = x.shape[0]
    w = _grouped_weight(weight, groups)
    padded = _grouped(pad(x, window), groups)
    out = xp.zeros((batch,) + w.shape[:2] + output_size, dtype=x.dtype)
    for tap, index in enumerate(tap_slices(window, output_size)):
        out += xp.einsum("goc,ngchw->ngohw", w[..., tap], padded[index])
    out = out.reshape((batch, -1) + output_size)
    if bias is not None:
        out += bias.reshape(1, -1, 1, 1)
    return out


def conv2d_input_grad_twin(grad, weight, input_size, window: Window2d, groups: int):
    """conv2d_input_grad as a sum over taps (the reference twin)."""
    xp = array_module(grad)
    batch, _, out_h, out_w = grad.shape
    w = _grouped_weight(weight, groups)
    g = grad.reshape(batch, groups, -1, out_h, out_w)
    padded = xp.zeros((batch, groups, w.shape[2]) + window.padded_size(*input_size),
                      dtype=grad.dtype)
    for tap, index in enumerate(tap_slices(window, (out_h, out_w))):
        padded[index] += xp.einsum("goc,ngohw->ngchw", w[..., tap], g)
    padded = padded.reshape((batch, -1) + padded.shape[-2:])
    return xp.ascontiguousarray(interior(padded, window, *input_size))


def conv2d_weight_grad_twin(x, grad, window: Window2d, groups: int):
    """conv2d_weight_grad as one channel contraction per tap (the reference twin)."""
    xp = array_module(x)
    batch, out_channels, out_h, out_w = grad.shape
    g = grad.reshape(batch, groups, -1, out_h, out_w)
    padded = _grouped(pad(x, window), groups)
    kh, kw = window.kernel
    dw = xp.empty((groups, out_channels // groups, padded.shape[2], kh * kw), dtype=x.dtype)
    for tap, index in enumerate(tap_slices(window, (out_h, out_w))):
        dw[..., tap] = xp.einsum("ngohw,ngchw->goc", g, padded[index])
    return dw.reshape(out_channels, -1, kh, kw)


def _grouped_weight(weight, groups: int):
    """w (O, C/G, kh, kw) as (G, O/G, C/G, kh kw)."""
    out_channels, group_channels, kh, kw = weight.shape
    return weight.reshape(groups, out_channels // groups, group_channels, kh * kw)


def _grouped(x, groups: int):
    """x (N, C, H, W) as (N, G, C/G, H, W)."""
    batch, channels, height, width = x.shape
    return x.reshape(batch, groups, channels // groups, height, width)
