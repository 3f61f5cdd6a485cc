"""The Numba kernel of dropout's mask (the formula is in kernels/bernoulli_mask.py).

Contract: out is a 1-D C-contiguous bool array, written in full; key is a uint64 and
threshold a uint32; out[2i] and out[2i + 1] are the low and high halves of SplitMix64's
word i + 1 from the key, each compared with the threshold, exactly as the twin computes
them (unsigned 64-bit arithmetic wraps the same way in both).

Performance rule: each word is a function of its index alone, so the loop over word
pairs carries nothing from one iteration to the next and LLVM vectorises it (64-bit
multiplies included); the odd last element is written after the loop, so the body has
no branch. Serial, as the other kernels (see softmax.py).
"""
import numpy as np

from minigrad.kernels.cpu.jit import kernel


@kernel
def _word(key, index):
    """SplitMix64's output number `index` (1, 2, ...) from the key."""
    z = key + np.uint64(index) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@kernel
def fill_mask(key, threshold, out):
    """out[k] = (32-bit half k of the key's stream) < threshold."""
    count = out.size
    pairs = count // 2
    for i in range(pairs):
        word = _word(key, i + 1)
        out[2 * i] = np.uint32(word & np.uint64(0xFFFFFFFF)) < threshold
        out[2 * i + 1] = np.uint32(word >> np.uint64(32)) < threshold
    if count % 2:
        word = _word(key, pairs + 1)
        out[count - 1] = np.uint32(word & np.uint64(0xFFFFFFFF)) < threshold
