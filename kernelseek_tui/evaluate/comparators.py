"""Peers measured in the same process and run as the candidate, when they can be imported.

The task's comparator module gets torch views of the candidate's own input buffers (DLPack, no
copies) and runs on the same stream, so the same timing code measures both. Torch is imported
here and nowhere else in the evaluator; a missing torch or peer is reported, never guessed.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import ModuleType
from typing import Any


def load_module(path: Path, name: str) -> ModuleType:
    """Import a task's Python file (reference or comparators) by path, compiled from its source
    text: never from a ``.pyc`` beside it, which Python would run in its place wherever the
    stamp in it matches the source's size and time (a review, 2026-12-07 late: a reference
    "returning whatever the cheat wants" that way, its source, fingerprinted, unchanged)."""
    try:
        source = path.read_bytes()
    except OSError as error:
        raise ImportError(f"cannot import {path}: {error}") from None
    module = ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)
    return module


class PeerRunner:
    """Prepares and runs one task's comparators on the evaluation's stream."""

    def __init__(self, module_path: Path | None, names: tuple[str, ...], stream_ptr: int) -> None:
        self.names = names
        self.absent_reason: str | None = None
        self._module: ModuleType | None = None
        self._torch: Any = None
        self._stream: Any = None
        if not names:
            return
        if module_path is None:
            self.absent_reason = "the task names comparators but no comparator module"
            return
        try:
            import torch

            self._torch = torch
            self._stream = torch.cuda.ExternalStream(stream_ptr)
            self._module = load_module(module_path, "kernelseek_task_comparators")
        except Exception as error:  # no torch, no CUDA torch, a broken module: all "absent"
            self.absent_reason = f"comparators unavailable ({type(error).__name__}: {error})"

    def preload(self) -> None:
        """Do now what the first peer call would otherwise do first: initialise torch's CUDA
        state and load the peers' libraries (the module's optional ``preload()``). A failure is
        left for that call, which reports it as it always has."""
        if self._module is None:
            return
        with contextlib.suppress(Exception):
            self._torch.cuda.init()
        hook = getattr(self._module, "preload", None)
        if callable(hook):
            with contextlib.suppress(Exception):
                hook()

    def warm_up(self) -> None:
        """Run the module's optional ``warm_up()`` on this runner's stream: each peer called
        once on small inputs, so that the libraries, kernels and handles a first call loads
        (seconds, in the first timed scenario otherwise) are loaded in a worker waiting for its
        request. A failure is left for the peer's first real call, which reports it."""
        if self._module is None:
            return
        hook = getattr(self._module, "warm_up", None)
        if not callable(hook):
            return
        with contextlib.suppress(Exception), self.stream_context():
            hook()
            self._torch.cuda.current_stream().synchronize()

    def stream_context(self) -> AbstractContextManager[Any]:
        if self._torch is None:
            return nullcontext()
        return self._torch.cuda.stream(self._stream)

    def to_torch(self, body: Any, dtype: str) -> Any:
        tensor = self._torch.from_dlpack(body)
        if dtype == "bfloat16":
            tensor = tensor.view(self._torch.bfloat16)
        return tensor

    def to_cupy(self, cp: Any, tensor: Any) -> tuple[Any, str]:
        """A torch output as a cupy array in storage form, with its task dtype name."""
        torch = self._torch
        if tensor.dtype == torch.bfloat16:
            return cp.from_dlpack(tensor.contiguous().view(torch.int16)).view(cp.uint16), "bfloat16"
        if tensor.dtype == torch.float16:
            return cp.from_dlpack(tensor.contiguous()), "float16"
        return cp.from_dlpack(tensor.contiguous().float()), "float32"

    def prepare(
        self,
        name: str,
        bodies: dict[str, tuple[Any, str]],
        fields: dict[str, int],
        floats: dict[str, float],
    ) -> Callable[[], dict[str, Any]] | str:
        """A callable running the peer once, or why the peer is absent for this scenario."""
        if self.absent_reason is not None:
            return self.absent_reason
        assert self._module is not None
        tensors = {key: self.to_torch(body, dtype) for key, (body, dtype) in bodies.items()}
        try:
            with self.stream_context():
                return self._module.prepare(name, tensors, fields, floats)
        except Exception as error:
            return f"{name} could not be prepared ({type(error).__name__}: {error})"
