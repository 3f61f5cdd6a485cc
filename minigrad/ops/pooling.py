"""2-D max and average pooling as Functions (the 1-D forms run over rows of height 1),
named as PyTorch's nodes: MaxPool2DWithIndicesBackward0 and AvgPool2DBackward0.

Each op loops over the kh * kw kernel taps (minigrad/kernels/windows.py): every tap is one
strided slice of the padded input, so an op costs kh * kw passes over the output, made in
cache-sized chunks of planes (`by_planes`). Each forward has an adjoint Function for its
gradient, and the two are each other's gradients, so second derivatives work:
    max:  MaxPool2DWithIndices -> MaxPool2DWithIndicesBackward (scatter g to the winners)
          <-> MaxPool2DWithIndicesSelect (gather at the winners)
    avg:  AvgPool2D <-> AvgPool2DBackward (spread g / divisor over each window)
"""
from __future__ import annotations

from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.kernels.windows import Window2d, by_planes, interior, pad, tap_slices


class MaxPool2DWithIndices(Function):
    """out[n, c, y, x] = the max of the window's taps (padding reads -inf; NaN propagates).
    dx = MaxPool2DWithIndicesBackward(g): each g goes to its window's winner, the first
    maximal tap, as in PyTorch."""

    def forward(self, x, window=None):
        self.window = window
        best = by_planes(_max_of_taps, x, window=window)
        self.save_for_backward(x, best)
        return best

    def backward(self, grad):
        x, out = self.saved
        winner = winning_taps(x.array, out.array, self.window)
        return MaxPool2DWithIndicesBackward.apply(grad, winner=winner, window=self.window,
                                                  input_size=x.shape[-2:])


class MaxPool2DWithIndicesBackward(Function):
    """dx: each g[n, c, y, x] added to the input element that won window (y, x) (summed
    where windows overlap);  dg = MaxPool2DWithIndicesSelect(h)."""

    def forward(self, grad, winner=None, window=None, input_size=None):
        self.winner, self.window, self.input_size = winner, window, input_size
        return by_planes(_scatter_to_winners, grad, winner, window=window,
                         input_size=input_size)

    def backward(self, h):
        return MaxPool2DWithIndicesSelect.apply(h, winner=self.winner, window=self.window)


class MaxPool2DWithIndicesSelect(Function):
    """out[n, c, y, x] = x at the element that won window (y, x) (max pooling's gather,
    once the winners are known);  dx = MaxPool2DWithIndicesBackward(g)."""

    def forward(self, x, winner=None, window=None):
        self.winner, self.window, self.input_size = winner, window, x.shape[-2:]
        return by_planes(_select_winners, x, winner, window=window)

    def backward(self, grad):
        return MaxPool2DWithIndicesBackward.apply(grad, winner=self.winner,
                                                  window=self.window,
                                                  input_size=self.input_size)


class AvgPool2D(Function):
    """out[n, c, y, x] = (sum of the window's taps, padding reading 0) / divisor[y, x];
    dx = AvgPool2DBackward(g)."""

    def forward(self, x, window=None, divisor=None):
        self.window, self.divisor, self.input_size = window, divisor, x.shape[-2:]
        return by_planes(_window_sums, x, window=window) / divisor

    def backward(self, grad):
        return AvgPool2DBackward.apply(grad, window=self.window, divisor=self.divisor,
                                       input_size=self.input_size)


class AvgPool2DBackward(Function):
    """dx: each g[n, c, y, x] / divisor[y, x] added to every element of window (y, x);
    dg = AvgPool2D(h)."""

    def forward(self, grad, window=None, divisor=None, input_size=None):
        self.window, self.divisor = window, divisor
        return by_planes(_spread, grad / divisor, window=window, input_size=input_size)

    def backward(self, h):
        return AvgPool2D.apply(h, window=self.window, divisor=self.divisor)


def winning_taps(x, best, window: Window2d):
    """The tap of each window's first element equal to its max `best` (or NaN there):
    max pooling's winners, for its gradient and for return_indices."""
    return by_planes(_winners, x, best, window=window)


# ----------------------------------------------------------------------------- tap loops
# on arrays (..., H, W) of planes; by_planes hands them chunks that fit in cache


def _max_of_taps(x, window: Window2d):
    xp = array_module(x)
    padded = pad(x, window, -xp.inf)
    taps = tap_slices(window, window.output_size(*x.shape[-2:]))
    best = xp.array(padded[next(taps)], order="C")
    for index in taps:
        xp.maximum(best, padded[index], out=best)
    return best


def _winners(x, best, window: Window2d):
    """winning_taps on a chunk of planes, as int8 (int32 for kernels of more than 127
    taps: int8 arithmetic runs 15x faster)."""
    xp = array_module(x)
    padded = pad(x, window, -xp.inf)
    taps = list(tap_slices(window, best.shape[-2:]))
    winner = xp.zeros(best.shape, dtype=xp.int8 if len(taps) <= 127 else xp.int32)
    nan_windows = bool(xp.isnan(best).any())
    # last tap first, so that the first maximal tap is the one left standing; a blend in
    # arithmetic, since where() with a data-dependent mask runs 10x slower (branches)
    for tap in reversed(range(len(taps))):
        values = padded[taps[tap]]
        hit = values == best
        if nan_windows:
            hit |= xp.isnan(values)
        winner += hit * (tap - winner)
    return winner


def _scatter_to_winners(grad, winner, window: Window2d, input_size):
    xp = array_module(grad)
    padded = xp.zeros(grad.shape[:-2] + window.padded_size(*input_size), dtype=grad.dtype)
    for tap, index in enumerate(tap_slices(window, grad.shape[-2:])):
        padded[index] += grad * (winner == tap)
    return xp.ascontiguousarray(interior(padded, window, *input_size))


def _select_winners(x, winner, window: Window2d):
    xp = array_module(x)
    padded = pad(x, window)
    out = xp.zeros(winner.shape, dtype=x.dtype)
    for tap, index in enumerate(tap_slices(window, winner.shape[-2:])):
        out = xp.where(winner == tap, padded[index], out)
    return out


def _window_sums(x, window: Window2d):
    padded = pad(x, window)
    taps = tap_slices(window, window.output_size(*x.shape[-2:]))
    total = padded[next(taps)].copy()
    for index in taps:
        total += padded[index]
    return total


def _spread(share, window: Window2d, input_size):
    xp = array_module(share)
    padded = xp.zeros(share.shape[:-2] + window.padded_size(*input_size), dtype=share.dtype)
    for index in tap_slices(window, share.shape[-2:]):
        padded[index] += share
    return xp.ascontiguousarray(interior(padded, window, *input_size))
