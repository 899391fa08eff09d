"""The compile stages of the CPU backends (engines/stage.py): ONNX Runtime and TorchScript.

Both are checked by running the written artifact on this machine's CPU against the
transformers reference; an int8 ONNX graph by the score gate of engines/parity.py.
"""
from __future__ import annotations

import importlib.metadata

from engines import parity
from engines.stage import CompileJob, Stage


def _engine(job: CompileJob, manifest):
    from engines.registry import engine_class

    return engine_class(job.backend)(job.work, manifest)


class OnnxStage(Stage):
    def export(self, job: CompileJob) -> dict:
        from engines.onnx_optimize import export_cpu

        graph = export_cpu(job.module, job.work / "model.onnx", job.output, job.max_seq_len, job.optimize,
                           job.precision)  # the export, fused and quantised as asked
        return {"device": "cpu", "runtime": "onnxruntime", "opset": 18, **graph}

    def validate(self, job: CompileJob, manifest) -> tuple[dict, list[str]]:
        with _engine(job, manifest) as engine:
            if job.precision in parity.SCORE_GATED:
                return parity.check_quantized(job.module, engine, job.tokenizer, job.task, job.precision,
                                              job.max_seq_len, threshold=job.threshold,
                                              positive_label=job.positive_label, rows=job.parity_rows), []
            return parity.check(job.module, engine, job.tokenizer, job.task, job.precision, job.max_seq_len), []


class TorchStage(Stage):
    def export(self, job: CompileJob) -> dict:
        from engines import export

        export.export_torchscript(job.module, job.work / "model.pt")
        try:
            torch = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            torch = ""
        return {"device": "cpu", "runtime": "torch", "torch": torch}

    def validate(self, job: CompileJob, manifest) -> tuple[dict, list[str]]:
        with _engine(job, manifest) as engine:
            return parity.check(job.module, engine, job.tokenizer, job.task, job.precision, job.max_seq_len), []
