"""PyTorch on the CPU, running a TorchScript artifact: the reference-faithful fallback."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from engines.base import Engine
from engines.errors import EngineUnavailableError


class TorchScriptEngine(Engine):
    backend = "torch"
    legacy_backends = ("torchscript",)  # what manifests written before the rename say
    compile_stage = "compiler.cpu_compile:TorchStage"

    def _load(self) -> None:
        try:
            import torch
        except ImportError as e:
            raise EngineUnavailableError("backend torch needs PyTorch: pip install torch") from e
        torch.set_num_threads(self.threads)
        self._torch = torch
        self._module = torch.jit.load(str(self.folder / "model.pt"), map_location="cpu").eval()

    def _infer(self, feed: Mapping[str, np.ndarray]) -> np.ndarray:
        torch = self._torch
        args = [torch.from_numpy(feed[n]) for n in self.spec.input_names]
        with torch.inference_mode():
            out = self._module(*args)
        return out.numpy()

    def _close(self) -> None:
        del self._module
