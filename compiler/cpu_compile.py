"""The compile stages of the CPU backends (compiler/stage.py): ONNX Runtime and TorchScript.

Both are checked by running the written artifact on this machine's CPU against the
transformers reference; an int8 ONNX graph by the score gate of engines/parity.py, whose rows
and reference outputs the artifact keeps (parity/score_rows.npz) with this CPU's int8 features,
so that a CPU with other int8 kernels re-runs the gate before it scores (engines/onnxruntime_cpu.py).
"""
from __future__ import annotations

import importlib.metadata

from compiler.stage import CompileJob, Stage
from engines import hardware, parity


def _engine(job: CompileJob, manifest):
    from engines.registry import engine_class

    return engine_class(job.backend)(job.work, manifest)


class OnnxStage(Stage):
    def export(self, job: CompileJob) -> dict:
        from compiler.onnx_optimize import export_cpu

        graph = export_cpu(job.module, job.work / "model.onnx", job.output, job.max_seq_len, job.optimize,
                           job.precision)  # the export, fused and quantised as asked
        return {"device": "cpu", "runtime": "onnxruntime", "opset": 18, **graph}

    def validate(self, job: CompileJob, manifest) -> tuple[dict, list[str]]:
        if job.precision not in parity.SCORE_GATED:
            with _engine(job, manifest) as engine:
                return parity.check(job.module, engine, job.tokenizer, job.task, job.precision, job.max_seq_len), []
        from engines.onnxruntime_cpu import OnnxRuntimeEngine

        with OnnxRuntimeEngine(job.work, manifest, gate_on_load=False) as engine:  # this is the gate
            record = parity.check_quantized(job.module, engine, job.tokenizer, job.task, job.precision,
                                            job.max_seq_len, threshold=job.threshold,
                                            positive_label=job.positive_label, rows=job.parity_rows,
                                            save_to=job.work / parity.SCORE_ROWS_FILE)
        features = hardware.cpu_features()
        record["cpu_features"] = None if features is None else list(features)
        return record, [parity.SCORE_ROWS_FILE]


class TorchStage(Stage):
    def export(self, job: CompileJob) -> dict:
        from compiler import export

        export.export_torchscript(job.module, job.work / "model.pt")
        try:
            torch = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            torch = ""
        return {"device": "cpu", "runtime": "torch", "torch": torch}

    def validate(self, job: CompileJob, manifest) -> tuple[dict, list[str]]:
        with _engine(job, manifest) as engine:
            return parity.check(job.module, engine, job.tokenizer, job.task, job.precision, job.max_seq_len), []
