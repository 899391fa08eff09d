"""fp16 and bf16 copies of an fp32 ONNX graph, for builders that take the precision from the graph.

Like compiler/onnx_optimize.py this is ONNX graph surgery with ONNX Runtime's own tools: its
fp16 converter, then, for bf16, every half tensor relabelled as bfloat16 with weights rounded
by ml_dtypes from their fp32 originals (not from fp16, whose subnormals would lose the small
ones). Inputs and outputs keep their fp32 types. TensorRT reads these graphs strongly typed
(engines/trt_build.py).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

# Kept in fp32 inside fp16/bf16 graphs: normalisation statistics lose too much in half precision.
FP32_OPS = ("LayerNormalization", "ReduceMean", "ReduceSum", "ReduceL2", "Pow", "Sqrt")
BF16_MAX = 3.3895313892515355e38  # largest finite bfloat16


def convert_precision(src: Path, dst: Path, precision: str) -> None:
    """Write `src` (fp32 ONNX) as an fp16 or bf16 graph with fp32 inputs/outputs kept as they are."""
    import onnx
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16
    from onnxruntime.transformers.onnx_model import OnnxModel

    model = onnx.load(str(src))
    fp32_weights = {t.name: t for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT}
    half = convert_float_to_float16(model, keep_io_types=True, op_block_list=list(DEFAULT_OP_BLOCK_LIST) + list(FP32_OPS))
    if precision == "bf16":
        _relabel_bf16(half, fp32_weights)
    elif precision != "fp16":
        raise ValueError(f"convert_precision: {precision!r} is not fp16 or bf16")
    # The converter appends its Cast nodes; TensorRT's parser reads nodes in order.
    OnnxModel.graph_topological_sort(half.graph)
    del half.graph.value_info[:]  # stale intermediate types from the export; consumers infer them
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(half, str(dst))


def bf16_tensor(name: str, values: np.ndarray):
    """A BFLOAT16 TensorProto of `values`, rounded to nearest even.

    Clamped first: float32's extremes (attention-mask fill values) would round to +-inf, and
    inf * 0 in the mask arithmetic is NaN.
    """
    import ml_dtypes
    import onnx

    values = np.clip(np.asarray(values, dtype=np.float32), -BF16_MAX, BF16_MAX)
    raw = np.ascontiguousarray(values.astype(ml_dtypes.bfloat16)).view(np.uint16)
    return onnx.helper.make_tensor(name, onnx.TensorProto.BFLOAT16, values.shape, raw.tobytes(), raw=True)


def _relabel_bf16(model, fp32_weights: dict) -> None:
    import onnx
    from onnx import TensorProto, numpy_helper

    fp16, bf16 = TensorProto.FLOAT16, TensorProto.BFLOAT16

    def tensor(t):
        if t.data_type != fp16:
            return t
        return bf16_tensor(t.name, numpy_helper.to_array(fp32_weights.get(t.name, t)))

    graph = model.graph
    for i, init in enumerate(list(graph.initializer)):
        graph.initializer[i].CopyFrom(tensor(init))
    for vi in list(graph.value_info) + list(graph.input) + list(graph.output):
        if vi.type.tensor_type.elem_type == fp16:
            vi.type.tensor_type.elem_type = bf16
    for node in graph.node:
        for attr in node.attribute:
            if node.op_type == "Cast" and attr.name == "to" and attr.i == fp16:
                attr.i = bf16
            elif attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == fp16:
                attr.t.CopyFrom(tensor(attr.t))
