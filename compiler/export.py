"""Turn a Hugging Face folder into a traceable module with the artifact's fixed signature:
(input_ids, attention_mask, token_type_ids) -> logits [B, C] or sentence_embedding [B, D]."""
from __future__ import annotations

from pathlib import Path

import torch

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class Classifier(torch.nn.Module):
    """Sequence-classification model returning plain logits (no dicts for tracers).

    `untrained_weights` names the weights the checkpoint lacked, which transformers initialised
    at random (an encoder without a task head): parity cannot see them, compiler.compile refuses them.
    """

    def __init__(self, model: torch.nn.Module, untrained_weights: tuple[str, ...] = ()):
        super().__init__()
        self.model = model
        self.untrained_weights = tuple(sorted(untrained_weights))

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids, return_dict=False)
        return out[0]


class Embedder(torch.nn.Module):
    """Bi-encoder: pooling and L2 normalisation inside the graph, so every engine agrees."""

    def __init__(self, encoder: torch.nn.Module, pooling: str = "mean"):
        super().__init__()
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
        self.encoder = encoder
        self.pooling = pooling

    def forward(self, input_ids, attention_mask, token_type_ids):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids, return_dict=False)[0]
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2.0, dim=-1)


def load_reference(model_dir: Path, task: str, pooling: str = "mean") -> tuple[torch.nn.Module, list[str]]:
    """The transformers model wrapped for export, and its labels (empty for embeddings)."""
    from transformers import AutoModel, AutoModelForSequenceClassification

    if task == "embedding":
        encoder = AutoModel.from_pretrained(model_dir, attn_implementation="eager")
        return Embedder(encoder, pooling).eval(), []
    model, loading = AutoModelForSequenceClassification.from_pretrained(
        model_dir, attn_implementation="eager", output_loading_info=True)
    id2label = model.config.id2label or {}
    labels = [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(model.config.num_labels)]
    return Classifier(model, tuple(loading["missing_keys"])).eval(), labels


def example_inputs(batch: int = 2, seq: int = 16) -> tuple[torch.Tensor, ...]:
    ids = torch.randint(1000, 2000, (batch, seq), dtype=torch.int64)
    mask = torch.ones_like(ids)
    mask[-1, seq // 2:] = 0  # a padded row, so the tracer sees masking in use
    return ids, mask, torch.zeros_like(ids)


def export_onnx(module: torch.nn.Module, path: Path, output: str, max_seq_len: int) -> None:
    """torch.export-based ONNX export with dynamic batch and sequence axes.

    The legacy TorchScript exporter bakes transformers>=5's mask arithmetic into constants
    (max |diff| 0.06 here), so the dynamo exporter is used and parity checks the result.
    """
    batch = torch.export.Dim("batch", min=1, max=4096)
    seq = torch.export.Dim("seq", min=2, max=max_seq_len)
    shapes = {name: {0: batch, 1: seq} for name in INPUTS}
    with torch.no_grad():
        torch.onnx.export(module, example_inputs(), str(path), input_names=list(INPUTS),
                          output_names=[output], dynamic_shapes=shapes, opset_version=18,
                          dynamo=True, external_data=False, verbose=False)


def export_torchscript(module: torch.nn.Module, path: Path) -> None:
    with torch.no_grad():
        traced = torch.jit.trace(module, example_inputs(), strict=False, check_trace=False)
    torch.jit.save(traced, str(path))
