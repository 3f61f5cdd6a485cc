"""Numba matrix products: a 2-D and a batched kernel in dot-product form (out = a @ bt.T),
and a batched kernel in outer-product form (out = a @ b).

Dot-product form (`gemm_nt`, `batched_gemm_nt`): both operands are read along their rows
(`a` is (m, k), `bt` is (n, k), both C-contiguous), so every output element is a dot
product of two contiguous rows. A register tile computes several at once (4x3 for the 2-D
kernel, 2x4 for the small matrices of the batched one, whose rows rarely come in threes):
LLVM vectorises the k loop as one reduction per accumulator (which needs reassociation)
and ends each with a horizontal sum, so it pays when k is long (k >= 32). The 2-D kernel
takes columns in blocks of `_COLUMN_BLOCK` rows of `bt` so a block stays in L2.

Outer-product form (`batched_gemm_nn`, b is (k, n) C-contiguous): the BLAS micro-kernel
shape, written with the explicit SIMD vectors of simd.py because LLVM's loop vectoriser
cannot keep a tile of accumulators in registers. A tile of 4 rows by 2 vectors (16 float32
or 8 float64 columns) holds 8 vector accumulators; per step of k it loads 2 vectors of
b, broadcasts 4 values of a and does 8 FMAs. Right edges use masked loads and stores
(a row of 20 float32 is one 4-row by 3-vector tile, the last vector masked), so no
operand is copied or padded.

Performance rule: serial (prange lost on every measured shape, 76 ms against 3 ms at
1024 x 128 x 512).
"""

from minigrad.kernels.cpu.jit import kernel
from minigrad.kernels.cpu.simd import fma, lanes, load, load_partial, store, store_partial, zeros

_FASTMATH = {"reassoc", "contract"}
_TILE_ROWS = 4
_TILE_COLS = 3
_COLUMN_BLOCK = 96


@kernel(fastmath=_FASTMATH)
def _dot(x, y):
    total = x.dtype.type(0)
    for p in range(x.size):
        total += x[p] * y[p]
    return total


@kernel(fastmath=_FASTMATH)
def _tile_4x3(a, bt, out, i, j):
    """out[i:i+4, j:j+3] = a[i:i+4] @ bt[j:j+3].T with twelve register accumulators."""
    a0, a1, a2, a3 = a[i], a[i + 1], a[i + 2], a[i + 3]
    b0, b1, b2 = bt[j], bt[j + 1], bt[j + 2]
    zero = a.dtype.type(0)
    s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = s30 = s31 = s32 = zero
    for p in range(a.shape[1]):
        x0, x1, x2 = b0[p], b1[p], b2[p]
        s00 += a0[p] * x0
        s01 += a0[p] * x1
        s02 += a0[p] * x2
        s10 += a1[p] * x0
        s11 += a1[p] * x1
        s12 += a1[p] * x2
        s20 += a2[p] * x0
        s21 += a2[p] * x1
        s22 += a2[p] * x2
        s30 += a3[p] * x0
        s31 += a3[p] * x1
        s32 += a3[p] * x2
    out[i, j], out[i, j + 1], out[i, j + 2] = s00, s01, s02
    out[i + 1, j], out[i + 1, j + 1], out[i + 1, j + 2] = s10, s11, s12
    out[i + 2, j], out[i + 2, j + 1], out[i + 2, j + 2] = s20, s21, s22
    out[i + 3, j], out[i + 3, j + 1], out[i + 3, j + 2] = s30, s31, s32


@kernel
def _row_tile(a, bt, out, i, j_start, j_stop):
    """Rows i..i+3 (fewer at the bottom edge) of out, columns j_start..j_stop-1."""
    rows = min(_TILE_ROWS, a.shape[0] - i)
    j = j_start
    if rows == _TILE_ROWS:
        while j + _TILE_COLS <= j_stop:
            _tile_4x3(a, bt, out, i, j)
            j += _TILE_COLS
    for jj in range(j, j_stop):
        for ii in range(i, i + rows):
            out[ii, jj] = _dot(a[ii], bt[jj])
    if rows < _TILE_ROWS:
        for ii in range(i, i + rows):
            for jj in range(j_start, j):
                out[ii, jj] = _dot(a[ii], bt[jj])


@kernel
def gemm_nt(a, bt, out):
    """out = a @ bt.T for a (m, k), bt (n, k), out (m, n), all C-contiguous."""
    m, n = out.shape
    for j_start in range(0, n, _COLUMN_BLOCK):
        j_stop = min(j_start + _COLUMN_BLOCK, n)
        for i in range(0, m, _TILE_ROWS):
            _row_tile(a, bt, out, i, j_start, j_stop)


@kernel(fastmath=_FASTMATH)
def _dots_2x4(a0, a1, b0, b1, b2, b3):
    """The eight dot products of rows a0, a1 with rows b0..b3, in one pass over k."""
    zero = a0.dtype.type(0)
    s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = zero
    for p in range(a0.size):
        x0, x1 = a0[p], a1[p]
        s00 += x0 * b0[p]
        s01 += x0 * b1[p]
        s02 += x0 * b2[p]
        s03 += x0 * b3[p]
        s10 += x1 * b0[p]
        s11 += x1 * b1[p]
        s12 += x1 * b2[p]
        s13 += x1 * b3[p]
    return s00, s01, s02, s03, s10, s11, s12, s13


@kernel(fastmath=_FASTMATH)
def _small_gemm_nt(a, bt, out):
    """out = a @ bt.T for one small matrix: 2x4 tiles, no column blocking (bt fits L1)."""
    m, n = out.shape
    for i in range(0, m - 1, 2):
        j = 0
        while j + 4 <= n:
            s00, s01, s02, s03, s10, s11, s12, s13 = _dots_2x4(
                a[i], a[i + 1], bt[j], bt[j + 1], bt[j + 2], bt[j + 3]
            )
            out[i, j], out[i, j + 1], out[i, j + 2], out[i, j + 3] = s00, s01, s02, s03
            out[i + 1, j], out[i + 1, j + 1] = s10, s11
            out[i + 1, j + 2], out[i + 1, j + 3] = s12, s13
            j += 4
        for jj in range(j, n):
            out[i, jj] = _dot(a[i], bt[jj])
            out[i + 1, jj] = _dot(a[i + 1], bt[jj])
    if m % 2:
        for jj in range(n):
            out[m - 1, jj] = _dot(a[m - 1], bt[jj])


@kernel
def batched_gemm_nt(a, bt, out):
    """out[s] = a[s] @ bt[s].T for a (batch, m, k), bt (batch, n, k), out (batch, m, n)."""
    for s in range(a.shape[0]):
        _small_gemm_nt(a[s], bt[s], out[s])


@kernel
def _tile_4x2(a, b, out, i, j):
    """out[i:i+4, j:j+2w] = a[i:i+4] @ b[:, j:j+2w], w = lanes: eight vector accumulators,
    per step of k two vector loads of b, four broadcasts of a and eight FMAs."""
    w = lanes(b)
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = zeros(b)
    for p in range(a.shape[1]):
        b0, b1 = load(b, p, j), load(b, p, j + w)
        x = a[i, p]
        c00, c01 = fma(x, b0, c00), fma(x, b1, c01)
        x = a[i + 1, p]
        c10, c11 = fma(x, b0, c10), fma(x, b1, c11)
        x = a[i + 2, p]
        c20, c21 = fma(x, b0, c20), fma(x, b1, c21)
        x = a[i + 3, p]
        c30, c31 = fma(x, b0, c30), fma(x, b1, c31)
    store(out, i, j, c00)
    store(out, i, j + w, c01)
    store(out, i + 1, j, c10)
    store(out, i + 1, j + w, c11)
    store(out, i + 2, j, c20)
    store(out, i + 2, j + w, c21)
    store(out, i + 3, j, c30)
    store(out, i + 3, j + w, c31)


@kernel
def _tile_4x1_partial(a, b, out, i, j, count):
    """The right edge: out[i:i+4, j:j+count] for count <= lanes, with masked loads."""
    c0 = c1 = c2 = c3 = zeros(b)
    for p in range(a.shape[1]):
        b0 = load_partial(b, p, j, count)
        c0 = fma(a[i, p], b0, c0)
        c1 = fma(a[i + 1, p], b0, c1)
        c2 = fma(a[i + 2, p], b0, c2)
        c3 = fma(a[i + 3, p], b0, c3)
    store_partial(out, i, j, count, c0)
    store_partial(out, i + 1, j, count, c1)
    store_partial(out, i + 2, j, count, c2)
    store_partial(out, i + 3, j, count, c3)


@kernel
def _tile_4x3_partial(a, b, out, i, j, count):
    """out[i:i+4, j:j+count] for 2 * lanes < count <= 3 * lanes: twelve accumulators, the
    third vector masked (a row of 20 float32 in one pass instead of 16 + 4)."""
    w = lanes(b)
    rest = count - 2 * w
    c00 = c01 = c02 = c10 = c11 = c12 = c20 = c21 = c22 = c30 = c31 = c32 = zeros(b)
    for p in range(a.shape[1]):
        b0, b1, b2 = load(b, p, j), load(b, p, j + w), load_partial(b, p, j + 2 * w, rest)
        x = a[i, p]
        c00, c01, c02 = fma(x, b0, c00), fma(x, b1, c01), fma(x, b2, c02)
        x = a[i + 1, p]
        c10, c11, c12 = fma(x, b0, c10), fma(x, b1, c11), fma(x, b2, c12)
        x = a[i + 2, p]
        c20, c21, c22 = fma(x, b0, c20), fma(x, b1, c21), fma(x, b2, c22)
        x = a[i + 3, p]
        c30, c31, c32 = fma(x, b0, c30), fma(x, b1, c31), fma(x, b2, c32)
    for r, (v0, v1, v2) in enumerate(
        ((c00, c01, c02), (c10, c11, c12), (c20, c21, c22), (c30, c31, c32))
    ):
        store(out, i + r, j, v0)
        store(out, i + r, j + w, v1)
        store_partial(out, i + r, j + 2 * w, rest, v2)


@kernel
def _row_partial(a, b, out, i, j, count):
    """The bottom edge: out[i, j:j+count] for count <= 2 * lanes."""
    w = lanes(b)
    low, high = min(count, w), max(count - w, 0)
    c0 = c1 = zeros(b)
    for p in range(a.shape[1]):
        c0 = fma(a[i, p], load_partial(b, p, j, low), c0)
        c1 = fma(a[i, p], load_partial(b, p, j + w, high), c1)
    store_partial(out, i, j, low, c0)
    store_partial(out, i, j + w, high, c1)


@kernel
def _small_gemm_nn(a, b, out):
    """out = a @ b for one small matrix, in register tiles of 4 rows by 2 vectors (by 3,
    the last one partial, when 2 to 3 vectors of columns are left)."""
    m, n = out.shape
    w = lanes(b)
    j = 0
    while j < n:
        width = n - j if 2 * w < n - j <= 3 * w else min(2 * w, n - j)
        for i in range(0, m - 3, 4):
            if width == 2 * w:
                _tile_4x2(a, b, out, i, j)
            elif width > 2 * w:
                _tile_4x3_partial(a, b, out, i, j, width)
            else:
                _tile_4x1_partial(a, b, out, i, j, min(width, w))
                if width > w:
                    _tile_4x1_partial(a, b, out, i, j + w, width - w)
        for i in range(m - m % 4, m):
            _row_partial(a, b, out, i, j, min(width, 2 * w))
            if width > 2 * w:
                _row_partial(a, b, out, i, j + 2 * w, width - 2 * w)
        j += width


@kernel
def batched_gemm_nn(a, b, out):
    """out[s] = a[s] @ b[s] for a (batch, m, k), b (batch, k, n), out (batch, m, n)."""
    for s in range(a.shape[0]):
        _small_gemm_nn(a[s], b[s], out[s])
