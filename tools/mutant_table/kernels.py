"""Mutants of the kernels (minigrad/kernels/): the Numba kernels and their reference twins
in plain `xp` code, each checked against the other (tests/test_kernels.py) and the twins
against PyTorch."""
from __future__ import annotations

from tools.mutant_table.mutant import Mutant

KERNELS = "tests/test_kernels.py::"
SEGMENTS = "tests/test_segment_sum.py::"
KERNEL_SEGMENTS = "tests/test_kernel_segment_sum.py::"
MASKS = "tests/test_kernel_bernoulli_mask.py::"

KERNEL_MUTANTS = [
    # ------------------------------------------------------------------ softmax
    Mutant("softmax_kernel_without_the_row_max", "minigrad/kernels/cpu/softmax.py",
           "shifts[r - start] = shift if shift > -np.inf else 0", "shifts[r - start] = 0",
           (KERNELS + "test_softmax_matches_reference",)),
    Mutant("softmax_twin_without_the_row_max", "minigrad/kernels/softmax.py",
           "e = xp.exp(x - row_max)", "e = xp.exp(x)",
           (KERNELS + "test_softmax_matches_reference",)),
    Mutant("softmax_backward_kernel_without_y_in_the_dot", "minigrad/kernels/cpu/softmax.py",
           "dot += g[r, j] * y[r, j]", "dot += g[r, j]",
           (KERNELS + "test_softmax_backward_matches_reference",)),
    Mutant("log_softmax_backward_kernel_without_exp", "minigrad/kernels/cpu/softmax.py",
           "values[e] = fast_exp(source[e])", "values[e] = source[e]",
           (KERNELS + "test_log_softmax_backward_matches_reference",)),
    Mutant("log_softmax_twin_masked_row_nan", "minigrad/kernels/softmax.py",
           "return shifted - xp.log(xp.where(total == 0, 1, total))",
           "return shifted - xp.log(total)",
           (KERNELS + "test_log_softmax_matches_reference",)),
    # ------------------------------------------------------------------ cross-entropy
    # the cross-entropy kernel runs log_softmax_rows, whose row max this removes
    Mutant("cross_entropy_kernel_without_the_row_max", "minigrad/kernels/cpu/softmax.py",
           "_row_shifts(x, scratch[0], start, stop)\n    for r in range(start, stop):\n"
           "        shift = simd.splat(x, scratch[0, r - start])\n        sums = simd.zeros(x)\n"
           "        for j in range(0, full, width):\n            sums = simd.add(",
           "scratch[0, : stop - start] = 0\n    for r in range(start, stop):\n"
           "        shift = simd.splat(x, scratch[0, r - start])\n        sums = simd.zeros(x)\n"
           "        for j in range(0, full, width):\n            sums = simd.add(",
           (KERNELS + "test_cross_entropy_of_a_batch_of_logits_near_100",
            KERNELS + "test_cross_entropy_matches_reference")),
    Mutant("cross_entropy_backward_kernel_smooths_ignored_rows",
           "minigrad/kernels/cpu/cross_entropy.py",
           "smooth = spread if valid else logp.dtype.type(0)", "smooth = spread",
           (KERNELS + "test_cross_entropy_all_ignored_gives_zero_loss_and_gradient",
            KERNELS + "test_cross_entropy_backward_matches_reference")),
    Mutant("cross_entropy_kernel_smoothing_without_the_class_weights",
           "minigrad/kernels/cpu/cross_entropy.py",
           "weighted_sum += class_weight[j] * logp[r, j]", "weighted_sum += logp[r, j]",
           (KERNELS + "test_cross_entropy_matches_reference",)),
    Mutant("cross_entropy_twin_smoothing_not_mixed", "minigrad/kernels/cross_entropy.py",
           "losses = (1 - label_smoothing) * losses +", "losses = losses +",
           # the drawn cases of one seed can all lack smoothing with two classes and a kept
           # row; the batch near 100 always has them (smoothing 0.1)
           (KERNELS + "test_cross_entropy_matches_reference",
            KERNELS + "test_cross_entropy_of_a_batch_of_logits_near_100")),
    # ------------------------------------------------------------------ erf
    Mutant("erf_kernel_loses_the_sign", "minigrad/kernels/cpu/erf.py",
           "math.copysign(large, value)", "large",
           ("tests/test_erf.py::test_erf_kernel_matches_its_twin_and_math_erf",)),
    Mutant("erf_twin_polynomial_past_its_range", "minigrad/kernels/erf.py",
           "xp.abs(wide) < SMALL_BOUND, small", "xp.abs(wide) < 2 * SMALL_BOUND, small",
           ("tests/test_erf.py::test_erf_at_the_edges_matches_math_erf",)),
    # ------------------------------------------------------------------ layer norm
    Mutant("layer_norm_kernel_eps_outside_the_sqrt", "minigrad/kernels/cpu/layer_norm.py",
           "scale = x.dtype.type(1) / np.sqrt(squares * inv_n + eps)",
           "scale = x.dtype.type(1) / (np.sqrt(squares * inv_n) + eps)",
           (KERNELS + "test_layer_norm_matches_reference",)),
    Mutant("layer_norm_twin_eps_outside_the_sqrt", "minigrad/kernels/layer_norm.py",
           "rstd = 1.0 / xp.sqrt(var + eps)", "rstd = 1.0 / (xp.sqrt(var) + eps)",
           (KERNELS + "test_layer_norm_matches_reference",)),
    Mutant("layer_norm_backward_kernel_without_the_xhat_term",
           "minigrad/kernels/cpu/layer_norm.py",
           "dx[r, j] = scale * (g[r, j] * weight[j] - mean_d - xhat * mean_d_xhat)",
           "dx[r, j] = scale * (g[r, j] * weight[j] - mean_d)",
           (KERNELS + "test_layer_norm_backward_matches_reference",)),
    Mutant("layer_norm_weight_grad_kernel_not_normalised", "minigrad/kernels/cpu/layer_norm.py",
           "dweight[j] += g[r, j] * ((x[r, j] - shift) * scale)",
           "dweight[j] += g[r, j] * (x[r, j] - shift)",
           (KERNELS + "test_layer_norm_weight_grad_matches_reference",)),
    Mutant("layer_norm_backward_twin_without_the_weight", "minigrad/kernels/layer_norm.py",
           "d = g * weight if weight is not None else g", "d = g",
           (KERNELS + "test_layer_norm_backward_matches_reference",)),
    # ------------------------------------------------------------------ adam
    Mutant("adam_kernel_without_the_second_bias_correction", "minigrad/kernels/cpu/adam.py",
           "(np.sqrt(second) / bias2_sqrt + eps)", "(np.sqrt(second) + eps)",
           (KERNELS + "test_adam_update_matches_reference",)),
    Mutant("adam_kernel_call_without_the_first_bias_correction", "minigrad/kernels/adam.py",
           "dtype(lr / (1 - beta1**step))", "dtype(lr)",
           (KERNELS + "test_adam_update_matches_reference",)),
    Mutant("adamw_kernel_also_decays_through_the_gradient", "minigrad/kernels/cpu/adam.py",
           "coupled = p.dtype.type(0) if decoupled else weight_decay",
           "coupled = weight_decay",
           (KERNELS + "test_adam_update_matches_reference",)),
    Mutant("adam_twin_without_the_second_bias_correction", "minigrad/kernels/adam.py",
           "    scratch /= math.sqrt(1 - beta2**step)\n", "",
           (KERNELS + "test_adam_update_matches_reference",)),
    Mutant("adam_group_kernel_takes_the_first_parameters_bias_correction",
           "minigrad/kernels/cpu/adam.py", "bias2_sqrts[k], beta1", "bias2_sqrts[0], beta1",
           (KERNELS + "test_adam_update_many_gives_each_parameter_its_own_update",)),
    Mutant("adam_group_call_without_the_first_bias_correction", "minigrad/kernels/adam.py",
           "step_sizes = np.array([lr / (1 - beta1**steps[k]) for k in indices], dtype)",
           "step_sizes = np.array([lr for k in indices], dtype)",
           (KERNELS + "test_adam_update_many_gives_each_parameter_its_own_update",)),
    Mutant("adam_twin_amsgrad_maximum_unused", "minigrad/kernels/adam.py",
           "v = xp.maximum(v_max, v, out=v_max)", "xp.maximum(v_max, v, out=v_max)",
           (KERNELS + "test_adam_update_matches_reference",)),
    # ------------------------------------------------------------------ segment sum
    Mutant("segment_sum_run_starts_inverted", "minigrad/kernels/segment_sum.py",
           "is_first[1:] = ids[1:] != ids[:-1]", "is_first[1:] = ids[1:] == ids[:-1]",
           (SEGMENTS + "test_segment_sum_is_its_twin_exactly_on_integer_values",)),
    Mutant("segment_tree_sum_crosses_runs", "minigrad/kernels/segment_sum.py",
           "takes = (rank % (2 * stride) == 0) & (partner < run_end)",
           "takes = rank % (2 * stride) == 0",
           (SEGMENTS + "test_segment_sum_is_its_twin_exactly_on_integer_values[gpu]",
            SEGMENTS + "test_the_gpu_adds_each_run_pairwise_in_index_order")),
    Mutant("segment_sum_kernel_overwrites_instead_of_adding",
           "minigrad/kernels/cpu/segment_sum.py",
           "out[segment, j] = out[segment, j] + values[i, j]", "out[segment, j] = values[i, j]",
           (KERNEL_SEGMENTS + "test_the_kernel_adds_in_add_ats_order",)),
    Mutant("segment_sum_kernel_adds_in_reverse_order", "minigrad/kernels/cpu/segment_sum.py",
           "for i in range(ids.shape[0]):", "for i in range(ids.shape[0] - 1, -1, -1):",
           (KERNEL_SEGMENTS + "test_the_kernel_adds_in_add_ats_order",)),
    Mutant("index_add_negative_rows_not_wrapped", "minigrad/kernels/segment_sum.py",
           "ids = rows.reshape(-1) % shape[0] if rows.size else rows.reshape(-1)",
           "ids = rows.reshape(-1)",
           (SEGMENTS + "test_index_add_is_add_at_for_every_kind_of_index[rows-gpu]",)),
    # ------------------------------------------------------------------ dropout's mask
    Mutant("bernoulli_mask_kernel_reads_the_high_half_twice",
           "minigrad/kernels/cpu/bernoulli_mask.py",
           "out[2 * i] = np.uint32(word & np.uint64(0xFFFFFFFF)) < threshold",
           "out[2 * i] = np.uint32(word >> np.uint64(32)) < threshold",
           (MASKS + "test_the_kernel_gives_the_twins_mask",)),
    Mutant("bernoulli_mask_twin_without_the_second_xorshift", "minigrad/kernels/bernoulli_mask.py",
           "z = (z ^ (z >> np.uint64(27))) * MIX2", "z = z * MIX2",
           (MASKS + "test_the_words_are_splitmix64s_published_outputs",)),
]
