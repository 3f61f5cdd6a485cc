"""`python -m train.toy_translate` with one fault planted, for the tests of what the
command does when things go wrong at a chosen moment:

    python tests/toy_translate_faults.py FAULT [toy_translate flags...]
    mpiexec -n 2 python tests/toy_translate_faults.py FAULT --distributed ...

FAULT is one of
    sigint-in-validation          SIGINT to itself while measuring the first validation loss
    sigint-in-test-evaluation     SIGINT while scoring the test set, after the run is saved
    sigint-then-sigint-in-save    SIGINT at step 3, and a second one once the checkpoint is
                                  written but not yet renamed over the previous one
    sigterm-on-rank-1             rank 1 alone gets SIGTERM at step 3
    nan-validation-on-rank-0      rank 0's share of the validation loss is NaN
    nan-training-loss-on-rank-1   rank 1's training loss is NaN at step 3
    memory-error-on-rank-1        rank 1 runs out of memory at step 3
"""
import os
import signal
import sys

import minigrad as mg
import minigrad.distributed as dist
import minigrad.serialization as serialization
from train import loop, toy_translate

FAULTY_STEP = 3


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


def plant(fault: str) -> None:
    """Wrap batch_loss (and for one fault the checkpoint writer) to misbehave."""
    real_batch_loss = loop.batch_loss
    calls = {"training": 0, "validation": 0}

    def faulty_batch_loss(model, src, tgt, device, label_smoothing):
        validating = not mg.is_grad_enabled()
        calls["validation" if validating else "training"] += 1
        at_faulty_step = not validating and calls["training"] == FAULTY_STEP
        if fault == "sigint-in-validation" and validating and calls["validation"] == 1:
            os.kill(os.getpid(), signal.SIGINT)
        elif fault == "sigint-then-sigint-in-save" and at_faulty_step:
            os.kill(os.getpid(), signal.SIGINT)
        elif fault == "sigterm-on-rank-1" and at_faulty_step and rank() == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        elif fault == "memory-error-on-rank-1" and at_faulty_step and rank() == 1:
            raise MemoryError("planted on rank 1")
        loss = real_batch_loss(model, src, tgt, device, label_smoothing)
        if (fault == "nan-validation-on-rank-0" and validating and rank() == 0
                or fault == "nan-training-loss-on-rank-1" and at_faulty_step and rank() == 1):
            return loss * float("nan")
        return loss

    loop.batch_loss = faulty_batch_loss
    if fault == "sigint-in-test-evaluation":
        real_score_test_set = toy_translate.score_test_set

        def score_test_set_interrupted(*args):
            os.kill(os.getpid(), signal.SIGINT)
            return real_score_test_set(*args)

        toy_translate.score_test_set = score_test_set_interrupted
    if fault == "sigint-then-sigint-in-save":
        real_replace_file = serialization.replace_file

        def replace_file_interrupted(path, write):
            def write_then_signal(file):
                write(file)  # the whole new checkpoint, in a file not yet renamed
                os.kill(os.getpid(), signal.SIGINT)
            real_replace_file(path, write_then_signal)

        serialization.replace_file = replace_file_interrupted


if __name__ == "__main__":
    plant(sys.argv[1])
    sys.exit(toy_translate.main(sys.argv[2:]))
