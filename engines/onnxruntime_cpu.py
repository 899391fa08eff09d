"""ONNX Runtime on the CPU: the embedded default.

int8 artifacts are gated per instruction set. ONNX Runtime's int8 kernels differ by CPU
(u8s8 dot products with VNNI or AMX; without them the 8-bit products are summed in 16 bits,
which can saturate), so labels that passed the gate on one CPU can fail it on another. The
manifest records the int8 features its gate ran on (engines/hardware.py); on a worker whose
features differ, `load()` re-runs the gate on the artifact's stored rows, as the TensorRT
engine does per GPU, and refuses the artifact (ParityError) when it fails.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from engines import hardware, parity
from engines.base import Engine
from engines.errors import EngineUnavailableError, ParityError


def features_text(features) -> str:
    return "[" + ", ".join(features) + "]" if features is not None else "unknown (no /proc/cpuinfo)"


class OnnxRuntimeEngine(Engine):
    backend = "onnx"
    precisions = ("fp32", "int8")
    compile_stage = "compiler.cpu_compile:OnnxStage"
    pad_multiple = 1  # the CPU gains nothing from sequence lengths rounded to 8; short queries lose a lot

    def __init__(self, *args, gate_on_load: bool = True, **kwargs):
        """`gate_on_load=False` only for the compile-time gate itself (compiler/cpu_compile.py)."""
        super().__init__(*args, **kwargs)
        self.gate_on_load = gate_on_load
        self.cpu_gate: str | None = None  # the gate re-run on this CPU, in words, when it ran

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
        if self.gate_on_load and self.manifest.precision in parity.SCORE_GATED:
            self._gate_on_this_cpu(hardware.cpu_features())

    def _gate_on_this_cpu(self, here: tuple[str, ...] | None) -> None:
        """Re-run the int8 gate unless this CPU has the int8 features it passed on; refuse on failure."""
        m = self.manifest
        gated_on = m.parity.get("cpu_features")
        if gated_on is not None and here is not None and tuple(gated_on) == tuple(here):
            return
        where = (f"{m.precision} artifact {m.model_id} passed its gate on CPU features {features_text(gated_on)}; "
                 f"this worker has {features_text(here)}")
        record = parity.check_stored_scores(self._infer, self.folder, m)
        if record is None:
            raise ParityError(f"{where}, and the artifact stores no gate rows to re-run the gate here "
                              f"(no {parity.SCORE_ROWS_FILE}): recompile it, or score with an fp32 artifact")
        tol = record["score_tolerance"]
        figures = (f"labels agree on {record['label_agreement']:.2%} of {record['score_rows']} rows "
                   f"(>= {tol['label_agreement']:.0%} needed), p99 |score diff| {record['p99_score_diff']:.4f} "
                   f"(<= {tol['p99_score_diff']} needed)")
        self.cpu_gate = f"gate re-run on {features_text(here)}: {figures}, {'passed' if record['passed'] else 'failed'}"
        if not record["passed"]:
            raise ParityError(f"{where}, and the gate re-run here fails: {figures}; refused")

    def _infer(self, feed: Mapping[str, np.ndarray]) -> np.ndarray:
        return self._session.run([self.manifest.output], {n: feed[n] for n in self._feeds})[0]

    def _close(self) -> None:
        del self._session
