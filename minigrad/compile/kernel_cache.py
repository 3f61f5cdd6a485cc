"""Generated kernels, compiled once: in this process, and on disk across processes.

Numba caches a function's machine code only if the function lives in a file (it keys
the cache by the file's path and time stamp). So each generated source is written to
`<folder>/fused_<hash of the source>.py` and imported from there; its `@kernel`
decorator (minigrad/kernels/cpu/jit.py) is numba.njit(cache=True), which keeps the
machine code in the `__pycache__` beside it. A file is never rewritten with other text:
its name is its content's hash.

The folder is NUMBA_CACHE_DIR/minigrad_fused when NUMBA_CACHE_DIR is set, else
$XDG_CACHE_HOME/minigrad/fused (~/.cache/minigrad/fused), else one in the temporary
folder.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from pathlib import Path

_loaded: dict[str, object] = {}  # hash of a source -> its compiled kernel
_lock = threading.Lock()


def load_kernel(source: str):
    """The kernel `fused` that `source` defines, imported from the cache folder."""
    key = hashlib.sha256(source.encode()).hexdigest()[:20]
    with _lock:
        kernel = _loaded.get(key)
        if kernel is None:
            path = _write(key, source)
            name = f"minigrad_fused_{key}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # where Numba's cache looks its functions up
            spec.loader.exec_module(module)
            kernel = _loaded[key] = module.fused
    return kernel


def cache_folder() -> Path:
    """Where generated kernels are written (module docstring)."""
    for folder in _candidates():
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return folder
    raise OSError("mg.compile: no writable folder for generated kernels")


def _candidates() -> list[Path]:
    folders = []
    if os.environ.get("NUMBA_CACHE_DIR"):
        folders.append(Path(os.environ["NUMBA_CACHE_DIR"]) / "minigrad_fused")
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    folders.append(Path(cache_home) / "minigrad" / "fused")
    user = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    folders.append(Path(tempfile.gettempdir()) / f"minigrad-fused-{user}")
    return folders


def _write(key: str, source: str) -> Path:
    path = cache_folder() / f"fused_{key}.py"
    if path.exists() and path.read_text() == source:
        return path
    # write beside it, then rename: another process may be importing the same file
    handle, partial = tempfile.mkstemp(dir=path.parent, suffix=".partial")
    with os.fdopen(handle, "w") as file:
        file.write(source)
    os.replace(partial, path)
    return path
