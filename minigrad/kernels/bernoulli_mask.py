"""Dropout's mask on the CPU: `count` booleans, each True with probability
threshold / 2^32, from one 64-bit key drawn from minigrad's generator.

The words come from SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
number generators", 2014) started at the key, used as a counter-based generator:

    z_i  = key + i * 0x9E3779B97F4A7C15                       (mod 2^64), i = 1, 2, ...
    z    = (z_i ^ (z_i >> 30)) * 0xBF58476D1CE4E5B9
    z    = (z ^ (z >> 27)) * 0x94D049BB133111EB
    w_i  = z ^ (z >> 31)
    mask[2i - 2] = low 32 bits of w_i < threshold,  mask[2i - 1] = high 32 bits < threshold

Each word depends on its index alone, so the kernel has no state to carry from one word
to the next and LLVM vectorises it: a (32, 16, 64) mask takes about 6 us, where drawing
its 16384 words from NumPy's PCG64 took 45 us. The generator's own stream advances by
the one key per mask, so a seed, a saved RNG state and a resumed run give the same masks.
The twin computes the same words with NumPy's uint64 arithmetic (which wraps, as the
kernel's does), so the two agree bit for bit and the dispatcher may pick either.
"""
import numpy as np

from minigrad.kernels.dispatch import cpu_kernels_for
from minigrad.kernels.thresholds import MIN_SIZE

GAMMA = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)


def splitmix64_words(key: int, count: int):
    """The first `count` outputs of SplitMix64 started at `key` (uint64)."""
    z = np.uint64(key) + np.arange(1, count + 1, dtype=np.uint64) * GAMMA
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
    return z ^ (z >> np.uint64(31))


def bernoulli_mask_twin(key: int, count: int, threshold: int):
    """The mask (module docstring) from NumPy's uint64 arithmetic."""
    words = splitmix64_words(key, (count + 1) // 2)
    halves = np.empty((words.size, 2), np.uint32)
    halves[:, 0] = words  # the cast keeps the low 32 bits
    halves[:, 1] = words >> np.uint64(32)
    return halves.reshape(-1)[:count] < np.uint32(threshold)


def bernoulli_mask(key: int, count: int, threshold: int):
    """`count` booleans, True where the next 32-bit half of the key's SplitMix64 stream
    is below `threshold` (0 <= threshold < 2^32)."""
    cpu = cpu_kernels_for("bernoulli_mask", MIN_SIZE["bernoulli_mask"], count)
    if cpu is None:
        return bernoulli_mask_twin(key, count, threshold)
    out = np.empty(count, np.bool_)
    cpu.fill_mask(np.uint64(key), np.uint32(threshold), out)
    return out
