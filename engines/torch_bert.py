"""A BERT encoder in plain PyTorch, for the torch-cuda backend: what a GPU worker runs without
transformers, TensorRT or a torch-version-bound serialized graph.

The artifact carries `torch/model.json` (the architecture below) and `torch/weights.pt` (a
state dict of plain tensors, read with `torch.load(weights_only=True)`), so any torch with
`scaled_dot_product_attention` (2.0 and newer) loads it, in any precision, on any device.
Compile (compiler/torch_cuda_compile.py TorchCudaStage) converts a transformers BERT into it and
holds this module to the transformers outputs (fp32 logits within 1e-4), so an architecture
detail this module lacks cannot pass unnoticed.

Faster than the transformers module on a GPU for the same weights: Q, K and V are one matmul,
attention is one fused `scaled_dot_product_attention` call with a boolean padding mask (the
flash and memory-efficient kernels), and nothing in `forward` reads a value back to the host,
so a CUDA graph can capture it. The heads (pooler and classifier, or pooling and L2
normalisation) run in fp32 whatever the encoder's precision.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

CONFIG_FILE = "torch/model.json"
WEIGHTS_FILE = "torch/weights.pt"
# transformers' `hidden_act` names this module computes, as F.gelu's `approximate` or relu.
ACTIVATIONS = {"gelu": "none", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "relu": None}
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@dataclasses.dataclass(frozen=True)
class BertShape:
    """The architecture: a BERT encoder and the artifact's head."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float
    hidden_act: str
    head: str  # "classifier" (pooler + linear: logits) or "embedding" (pooling + L2 norm)
    num_labels: int = 0
    pooling: str = "mean"  # embedding: "mean" over real tokens or "cls"

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def read(cls, folder: Path) -> "BertShape":
        return cls(**json.loads((Path(folder) / CONFIG_FILE).read_text()))


class _Layer(nn.Module):
    def __init__(self, s: BertShape):
        super().__init__()
        self.heads = s.num_attention_heads
        self.qkv = nn.Linear(s.hidden_size, 3 * s.hidden_size)
        self.attention_out = nn.Linear(s.hidden_size, s.hidden_size)
        self.attention_norm = nn.LayerNorm(s.hidden_size, eps=s.layer_norm_eps)
        self.intermediate = nn.Linear(s.hidden_size, s.intermediate_size)
        self.output = nn.Linear(s.intermediate_size, s.hidden_size)
        self.output_norm = nn.LayerNorm(s.hidden_size, eps=s.layer_norm_eps)
        self.approximate = ACTIVATIONS[s.hidden_act]

    def forward(self, x: torch.Tensor, attend: torch.Tensor) -> torch.Tensor:
        b, n, width = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=attend)
        x = self.attention_norm(x + self.attention_out(context.transpose(1, 2).reshape(b, n, width)))
        inner = self.intermediate(x)
        inner = F.relu(inner) if self.approximate is None else F.gelu(inner, approximate=self.approximate)
        return self.output_norm(x + self.output(inner))


class Bert(nn.Module):
    """(input_ids, attention_mask, token_type_ids) -> logits [B, C] or embeddings [B, D], float32."""

    def __init__(self, s: BertShape):
        super().__init__()
        if s.hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act {s.hidden_act!r} is not one of {sorted(ACTIVATIONS)}")
        self.shape = s
        self.word = nn.Embedding(s.vocab_size, s.hidden_size)
        self.position = nn.Embedding(s.max_position_embeddings, s.hidden_size)
        self.token_type = nn.Embedding(s.type_vocab_size, s.hidden_size)
        self.embedding_norm = nn.LayerNorm(s.hidden_size, eps=s.layer_norm_eps)
        self.layers = nn.ModuleList(_Layer(s) for _ in range(s.num_hidden_layers))
        if s.head == "classifier":
            self.pooler = nn.Linear(s.hidden_size, s.hidden_size)
            self.classifier = nn.Linear(s.hidden_size, s.num_labels)

    def encoder_to(self, dtype: torch.dtype) -> "Bert":
        """The encoder in `dtype`; the head's small matmuls stay in fp32 (no parity cost, no speed cost)."""
        for module in (self.word, self.position, self.token_type, self.embedding_norm, self.layers):
            module.to(dtype)
        return self

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor,
                padded: bool = True) -> torch.Tensor:
        """`padded=False` promises every attention_mask value is 1: attention then runs without a
        mask, which scaled_dot_product_attention's flash kernel needs."""
        n = input_ids.shape[1]
        positions = torch.arange(n, device=input_ids.device)
        x = self.embedding_norm(self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids))
        # [B, 1, 1, S]: True where a key is a real token
        attend = (attention_mask != 0)[:, None, None, :] if padded else None
        for layer in self.layers:
            x = layer(x, attend)
        x = x.float()
        if self.shape.head == "classifier":
            return self.classifier(torch.tanh(self.pooler(x[:, 0])))
        if self.shape.pooling == "cls":
            pooled = x[:, 0]
        else:
            mask = attention_mask.unsqueeze(-1).to(x.dtype)
            pooled = (x * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, p=2.0, dim=-1)


def load(folder: Path, precision: str, device: torch.device) -> Bert:
    """The artifact's model on `device`, its encoder in `precision`, ready for inference."""
    shape = BertShape.read(folder)
    with torch.device("meta"):
        model = Bert(shape)
    state = torch.load(Path(folder) / WEIGHTS_FILE, map_location=device, weights_only=True)
    model.load_state_dict(state, assign=True)
    return model.encoder_to(DTYPES[precision]).eval().requires_grad_(False)
