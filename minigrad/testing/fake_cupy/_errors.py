"""The stand-in's CUDA runtime error, in a module of its own so that the recording of
captures (_capture.py) can raise it without importing cupy.cuda (which imports it)."""


class CUDARuntimeError(RuntimeError):
    """What CUDA runtime calls raise: "<CUDA's error name>: <its description>"."""
