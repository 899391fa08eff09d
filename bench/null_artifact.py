"""A zero-cost artifact: a real compiled artifact whose graph does no work.

Its `model.onnx` takes the same inputs and gives an output of the same name, dtype and width
as the compiled model's, but only sums each row's attention mask and broadcasts the sum to
that width. Everything else is the compiled artifact's own: tokenizer, task, labels,
threshold, max sequence length, buckets. The manifest pins the new graph by sha256 like any
artifact's, so the jobs open, verify and run it through the same code as the real one, and
what they spend on it is the host side of the job alone: read, Arrow, validation,
tokenization, batching and padding, scatter, output and write.
"""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from engines.artifact import MANIFEST, sha256_file, write_manifest
from engines.store import open_artifact

GRAPH = "null: attention-mask sum broadcast to the output width"


def _output_width(compiled: Path, manifest) -> int:
    """The compiled model's output width, from one tiny batch (exported widths may be symbolic)."""
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(str(compiled / "model.onnx"), providers=["CPUExecutionProvider"])
    ones = np.ones((1, 8), dtype=np.int64)
    feed = {"input_ids": ones, "attention_mask": ones, "token_type_ids": np.zeros_like(ones)}
    names = {i.name for i in session.get_inputs()}
    out = session.run([manifest.output], {k: v for k, v in feed.items() if k in names})[0]
    if out.ndim != 2:
        raise ValueError(f"{compiled}: output {manifest.output!r} has shape {out.shape}, not [batch, width]")
    return int(out.shape[1])


def null_graph(inputs: tuple[str, ...], output: str, width: int):
    """[batch, seq] int64 inputs -> [batch, width] float32: sum(attention_mask, axis=1) repeated."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["mask_f", "axes"], ["row_sum"], keepdims=1),
        helper.make_node("Expand", ["row_sum", "width"], [output]),
    ]
    inits = [helper.make_tensor("axes", TensorProto.INT64, [1], [1]),
             helper.make_tensor("width", TensorProto.INT64, [2], [1, width])]
    graph = helper.make_graph(
        nodes, "null", [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in inputs],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", width])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def build(compiled: Path, out: Path) -> Path:
    """`out`: `compiled` with its graph replaced by the null graph; rebuilt when `compiled` changed."""
    import onnx

    compiled, out = Path(compiled), Path(out)
    source = open_artifact(compiled)
    if "model.onnx" not in source.files:
        raise ValueError(f"{compiled}: the null artifact is built from an ONNX artifact (no model.onnx)")
    try:
        if open_artifact(out).source.get("null_of") == source.digest:
            return out
    except Exception:  # noqa: BLE001 - absent or stale: rebuild
        pass
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(compiled, tmp, ignore=shutil.ignore_patterns("model.onnx", MANIFEST))
    width = _output_width(compiled, source)
    onnx.save(null_graph(source.inputs, source.output, width), str(tmp / "model.onnx"))
    files = {rel: sha256_file(tmp / rel) for rel in source.files}
    manifest = dataclasses.replace(
        source, name=f"{source.name}-null", files=files,
        target={**source.target, "graph": GRAPH, "fused_ops": {}},
        parity={"reference": "none: this graph does no work, its outputs mean nothing"},
        source={"null_of": source.digest, "compiled": str(compiled)})
    write_manifest(tmp, manifest)
    open_artifact(tmp)  # every file against the manifest, as a job would
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out
