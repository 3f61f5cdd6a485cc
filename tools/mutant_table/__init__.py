"""The planted bugs of `python -m tools.mutants`, one entry per mutant, by area."""
from tools.mutant_table.compile import COMPILE_MUTANTS
from tools.mutant_table.kernels import KERNEL_MUTANTS
from tools.mutant_table.library import LIBRARY_MUTANTS
from tools.mutant_table.mutant import Mutant
from tools.mutant_table.ops import OPS_MUTANTS

MUTANTS: list[Mutant] = OPS_MUTANTS + KERNEL_MUTANTS + LIBRARY_MUTANTS + COMPILE_MUTANTS

__all__ = ["MUTANTS", "Mutant"]
