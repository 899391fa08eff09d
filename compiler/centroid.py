"""Build a text-classification artifact from a sentence encoder and labelled example texts.

    python -m compiler.centroid --encoder HF_DIR --examples examples.csv --out artifacts/intent

A nearest-centroid classifier written as a linear head: the weights are the L2-normalised
mean embeddings of each label's examples, the logits are cosine / temperature. The head sits
inside the exported graph, so the result is an ordinary artifact for every engine.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from engines.errors import ArtifactError, ParityError


class CentroidClassifier(torch.nn.Module):
    def __init__(self, embedder: torch.nn.Module, centroids: torch.Tensor, temperature: float):
        super().__init__()
        self.embedder = embedder
        self.register_buffer("centroids", torch.nn.functional.normalize(centroids, dim=-1))
        self.scale = 1.0 / temperature

    def forward(self, input_ids, attention_mask, token_type_ids):
        emb = self.embedder(input_ids, attention_mask, token_type_ids)
        return emb @ self.centroids.T * self.scale


def embed(embedder: torch.nn.Module, tokenizer, texts: list[str], max_seq_len: int, batch: int = 64) -> torch.Tensor:
    out = []
    with torch.no_grad():
        for i in range(0, len(texts), batch):
            enc = tokenizer(texts[i:i + batch], padding=True, truncation=True, max_length=max_seq_len, return_tensors="pt")
            out.append(embedder(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]))
    return torch.cat(out)


def centroids_from(embeddings: torch.Tensor, labels: list[str]) -> tuple[list[str], torch.Tensor]:
    """Label order is sorted, so the same examples always give the same artifact."""
    names = sorted(set(labels))
    index = torch.tensor([names.index(l) for l in labels])
    sums = torch.zeros(len(names), embeddings.shape[1]).index_add_(0, index, embeddings)
    return names, sums / torch.bincount(index, minlength=len(names)).unsqueeze(1)


def read_examples(path: Path, split: str | None) -> tuple[list[str], list[str]]:
    import pandas as pd

    df = pd.read_csv(path)
    missing = {"intent", "query"} - set(df.columns)
    if missing:
        raise ArtifactError(f"{path} needs columns intent and query; missing {sorted(missing)}")
    if split is not None and "split" in df.columns:
        df = df[df["split"] == split]
    if df.empty:
        raise ArtifactError(f"{path} has no examples{f' in split {split!r}' if split else ''}")
    return df["query"].astype(str).tolist(), df["intent"].astype(str).tolist()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m compiler.centroid", description=__doc__.split("\n\n")[0])
    p.add_argument("--encoder", required=True, type=Path, help="Hugging Face sentence-encoder folder")
    p.add_argument("--examples", required=True, type=Path, help="CSV with columns intent, query (and optionally split)")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--split", default="build", help="use only rows of this split when the CSV has one; default: build")
    p.add_argument("--temperature", type=float, default=0.05, help="logits = cosine / temperature; default: 0.05")
    p.add_argument("--backend", default="onnx", choices=("onnx", "torch"))
    p.add_argument("--max-seq-len", type=int, default=64, help="queries are short; default: 64")
    p.add_argument("--name", default="intent-centroid")
    p.add_argument("--version", default="1")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    from transformers import AutoTokenizer

    from compiler.compile import argv_without_out, build_artifact
    from compiler.export import load_reference

    try:
        texts, labels = read_examples(args.examples, args.split)
        embedder, _ = load_reference(args.encoder, "embedding", "mean")
        tokenizer = AutoTokenizer.from_pretrained(args.encoder)
        names, centroids = centroids_from(embed(embedder, tokenizer, texts, args.max_seq_len), labels)
        module = CentroidClassifier(embedder, centroids, args.temperature).eval()
        manifest = build_artifact(module, args.encoder, args.out, task="text-classification", backend=args.backend,
                                  name=args.name, version=args.version, max_seq_len=args.max_seq_len, labels=names,
                                  source={"encoder": str(args.encoder), "examples": str(args.examples),
                                          "build_args": argv_without_out(argv),
                                          "examples_used": len(texts), "temperature": args.temperature})
    except (ArtifactError, ParityError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"artifact": str(args.out), "model": manifest.model_id, "labels": list(manifest.labels),
                      "examples": len(texts), "parity": manifest.parity}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
