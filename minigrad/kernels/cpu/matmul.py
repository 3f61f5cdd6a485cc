"""Numba matrix products, written in dot-product form: out = a @ bt.T.

Both operands are read along their rows (`a` is (m, k), `bt` is (n, k), both
C-contiguous), so every output element is a dot product of two contiguous rows. A 4x3
register tile computes 12 of them at once: per step of k it loads 4 + 3 vectors and does
12 fused multiply-adds, the 12 accumulators stay in AVX registers (LLVM vectorises the
k loop as 12 reductions, which needs reassociation). Columns are taken in blocks of
`_COLUMN_BLOCK` rows of `bt` so the block stays in L2 while all row tiles stream past it.

Performance rule: `gemm_nt` parallelises over row tiles, `batched_gemm_nt` over the batch,
only when `parallel` is true (the dispatcher decides by size).
"""

from numba import njit, prange

_FASTMATH = {"reassoc", "contract"}
_TILE_ROWS = 4
_TILE_COLS = 3
_COLUMN_BLOCK = 96


@njit(fastmath=_FASTMATH, cache=True)
def _dot(x, y):
    total = x.dtype.type(0)
    for p in range(x.size):
        total += x[p] * y[p]
    return total


@njit(fastmath=_FASTMATH, cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def _gemm_nt_serial(a, bt, out):
    m, n = out.shape
    for j_start in range(0, n, _COLUMN_BLOCK):
        j_stop = min(j_start + _COLUMN_BLOCK, n)
        for i in range(0, m, _TILE_ROWS):
            _row_tile(a, bt, out, i, j_start, j_stop)


@njit(cache=True, parallel=True)
def gemm_nt(a, bt, out, parallel):
    """out = a @ bt.T for a (m, k), bt (n, k), out (m, n), all C-contiguous."""
    if not parallel:
        _gemm_nt_serial(a, bt, out)
        return
    m, n = out.shape
    row_tiles = (m + _TILE_ROWS - 1) // _TILE_ROWS
    for j_start in range(0, n, _COLUMN_BLOCK):
        j_stop = min(j_start + _COLUMN_BLOCK, n)
        for t in prange(row_tiles):
            _row_tile(a, bt, out, t * _TILE_ROWS, j_start, j_stop)


@njit(cache=True, parallel=True)
def batched_gemm_nt(a, bt, out, parallel):
    """out[s] = a[s] @ bt[s].T for a (batch, m, k), bt (batch, n, k), out (batch, m, n)."""
    if parallel:
        for s in prange(a.shape[0]):
            _gemm_nt_serial(a[s], bt[s], out[s])
    else:
        for s in range(a.shape[0]):
            _gemm_nt_serial(a[s], bt[s], out[s])


@njit(fastmath=_FASTMATH, cache=True)
def _gemm_nn_serial(a, b, out):
    """out = a @ b in axpy form: out[i] += a[i, p] * b[p] for each p, vectorised along the
    row, so no transpose of b is needed; pays when rows of b are long and k is short."""
    m, k = a.shape
    for i in range(m):
        row = out[i]
        row[:] = 0
        for p in range(k):
            scale = a[i, p]
            source = b[p]
            for j in range(row.size):
                row[j] += scale * source[j]


@njit(cache=True, parallel=True)
def batched_gemm_nn(a, b, out, parallel):
    """out[s] = a[s] @ b[s] for a (batch, m, k), b (batch, k, n), out (batch, m, n)."""
    if parallel:
        for s in prange(a.shape[0]):
            _gemm_nn_serial(a[s], b[s], out[s])
    else:
        for s in range(a.shape[0]):
            _gemm_nn_serial(a[s], b[s], out[s])
