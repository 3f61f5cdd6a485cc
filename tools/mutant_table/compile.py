"""Mutants of mg.compile: the fused kernels it writes for CPU and GPU plans, what a
capture holds, and a plan's buffers."""
from __future__ import annotations

from tools.mutant_table.mutant import Mutant

GPU_FUSION = "tests/test_compile_gpu_fusion.py::"
FUSION = "tests/test_compile_fusion.py::"
CAPTURE_MEMORY = "tests/test_compile_capture_memory.py::"
BUFFERS = "tests/test_compile_buffers.py::"

COMPILE_MUTANTS = [
    Mutant("fused_fourth_power_in_another_order", "minigrad/compile/kernel_source.py",
           '4: f"({x} * {x}) * ({x} * {x})"', '4: f"{x} * {x} * {x} * {x}"',
           (FUSION + "test_small_integer_powers_are_fused_as_eagers_products",)),
    Mutant("cuda_float32_literal_read_as_double", "minigrad/compile/cuda_kernel_source.py",
           'return f"{text}f" if dtype == np.float32 else text', "return text",
           (GPU_FUSION + "test_the_source_computes_each_op_in_its_dtype_with_typed_literals",)),
    Mutant("cuda_where_branches_swapped", "minigrad/compile/cuda_kernel_source.py",
           'return f"{names[condition]} ? {values[0]} : {values[1]}"',
           'return f"{names[condition]} ? {values[1]} : {values[0]}"',
           (GPU_FUSION + "test_where_comparisons_and_casts_fuse_on_the_gpu",)),
    Mutant("cuda_kernels_contract_multiply_adds", "minigrad/compile/cuda_kernel_source.py",
           'OPTIONS = ("--fmad=false",)', "OPTIONS = ()",
           (GPU_FUSION + "test_fused_gpu_kernels_are_elementwise_kernels_without_contraction",)),
    Mutant("gpu_group_takes_host_arrays", "minigrad/compile/fusion.py",
           "and all(target.holds(arrays[slot]) for slot in slots)", "and True",
           (GPU_FUSION + "test_a_gpu_plan_fuses_its_gpu_arrays_only",)),
    Mutant("capture_holds_every_array_of_the_step", "minigrad/compile/slots.py",
           "self._alive[slot] = (_strong(traced) if keep else",
           "self._alive[slot] = (_strong(traced) if True else",
           (CAPTURE_MEMORY + "test_a_capture_frees_the_steps_intermediate_arrays_as_eager_does",)),
    Mutant("memory_numbered_by_id", "minigrad/compile/slots.py",
           "number = len(self._owners)", "number = id(owner)",
           (CAPTURE_MEMORY + "test_memory_numbers_are_never_given_twice",)),
    Mutant("padding_of_negative_zeros", "minigrad/compile/kernel_source.py",
           'return f"{value} if {\' and \'.join(inside)} else {_literal(0.0, dtype)}"',
           'return f"{value} if {\' and \'.join(inside)} else {_literal(-0.0, dtype)}"',
           (FUSION + "test_the_adjoints_of_slicing_are_fused_as_shifted_reads_bit_for_bit",)),
    Mutant("gpu_fuses_the_adjoint_of_slicing", "minigrad/compile/fusion_targets.py",
           'unfused_ops = frozenset({"pad"})', "unfused_ops = frozenset()",
           (GPU_FUSION + "test_the_adjoint_of_a_split_is_left_to_cupy_on_the_gpu",)),
    Mutant("outputs_written_into_the_block", "minigrad/compile/buffers.py",
           "escaped = {slot_roots.get(s) for s in protected} | ",
           "escaped = set() | ",
           (BUFFERS + "test_results_read_after_the_call_are_never_in_the_block",)),
    Mutant("gradients_written_into_the_block", "minigrad/compile/buffers.py",
           "if isinstance(step, (Opaque, SetGrad)):", "if isinstance(step, Opaque):",
           (BUFFERS + "test_gradients_set_by_a_compiled_step_outlive_the_next_step",)),
    Mutant("buffer_reused_by_its_last_readers_result", "minigrad/compile/buffers.py",
           "live = [interval for interval in live if interval[2] >= index]",
           "live = [interval for interval in live if interval[2] > index]",
           (BUFFERS + "test_arrays_that_never_live_together_share_the_block",)),
    Mutant("buffers_never_shared", "minigrad/compile/buffers.py",
           "live = [interval for interval in live if interval[2] >= index]",
           "live = list(live)",
           (BUFFERS + "test_arrays_that_never_live_together_share_the_block",)),
]
