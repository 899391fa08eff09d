"""ONNX Runtime on the CPU: the embedded default."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from engines.base import Engine
from engines.errors import EngineUnavailableError


class OnnxRuntimeEngine(Engine):
    backend = "onnx"
    precisions = ("fp32", "int8")
    compile_stage = "engines.cpu_compile:OnnxStage"
    pad_multiple = 1  # the CPU gains nothing from sequence lengths rounded to 8; short queries lose a lot

    @classmethod
    def runs(cls, manifest) -> bool:
        """Also any artifact that carries model.onnx (a tensorrt artifact does: its CPU fallback)."""
        return super().runs(manifest) or "model.onnx" in manifest.files

    def _load(self) -> None:
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise EngineUnavailableError("backend onnx needs the onnxruntime package: pip install onnxruntime") from e
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # One Spark task owns `spark.task.cpus` cores; ORT's default (all cores, spinning) would
        # oversubscribe every executor that runs several tasks.
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(self.folder / "model.onnx"), so,
                                             providers=["CPUExecutionProvider"])
        wanted = set(self.spec.input_names)
        self._feeds = [i.name for i in self._session.get_inputs() if i.name in wanted]

    def _infer(self, feed: Mapping[str, np.ndarray]) -> np.ndarray:
        return self._session.run([self.manifest.output], {n: feed[n] for n in self._feeds})[0]

    def _close(self) -> None:
        del self._session
