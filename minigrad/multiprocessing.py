"""minigrad.multiprocessing: the standard library's multiprocessing under PyTorch's name.

torch.multiprocessing re-exports multiprocessing's API (get_context, set_start_method,
Process, Queue, Pool, ...) and adds sharing of tensor storage between processes.
minigrad adds nothing: a tensor does not share its memory, so send arrays (as the
DataLoader's workers do) and build tensors where they are used. Every name here is the
standard module's, looked up when used, so it follows set_start_method.
"""
import multiprocessing as _multiprocessing

__all__ = list(_multiprocessing.__all__)


def __getattr__(name: str):
    if name in __all__:
        return getattr(_multiprocessing, name)
    raise AttributeError(f"module 'minigrad.multiprocessing' has no attribute {name!r} "
                         "(it re-exports the standard multiprocessing module's API)")


def __dir__() -> list[str]:
    return sorted(__all__)
