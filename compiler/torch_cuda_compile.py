"""The torch-cuda compile stage (compiler/stage.py): a transformers BERT as engines/torch_bert.py's
architecture file and state dict, in the artifact's precision.

Checked twice here: the module in fp32 against transformers on the CPU (logits max |diff| <=
1e-4, embeddings cosine >= 0.9999), which proves the conversion and that this model has nothing
torch_bert does not implement; then the written artifact in its precision through
TorchCudaEngine, with the gate each worker re-runs on its own device at load: on this machine's
GPU where it has one (no GPU is needed to compile), else on its CPU.
"""
from __future__ import annotations

import importlib.metadata

from compiler.accel_compile import AcceleratedStage
from compiler.stage import CompileJob
from engines import parity
from engines.errors import ArtifactError, ParityError

# The transformers names of what torch_bert reads, per torch_bert name.
EMBEDDINGS = {"word": "word_embeddings", "position": "position_embeddings", "token_type": "token_type_embeddings",
              "embedding_norm": "LayerNorm"}
LAYER = {"attention_out": "attention.output.dense", "attention_norm": "attention.output.LayerNorm",
         "intermediate": "intermediate.dense", "output": "output.dense", "output_norm": "output.LayerNorm"}


def _parts(module):
    """(BertModel, classifier or None, head settings) of compiler/export.py's wrapped reference."""
    if hasattr(module, "encoder"):  # export.Embedder
        return module.encoder, None, {"head": "embedding", "pooling": module.pooling}
    model = module.model  # export.Classifier around an AutoModelForSequenceClassification
    bert, classifier = getattr(model, "bert", None), getattr(model, "classifier", None)
    if bert is None or classifier is None or getattr(bert, "pooler", None) is None:
        raise ArtifactError(f"backend torch-cuda runs BERT sequence classifiers (a pooler and a linear classifier); "
                            f"{type(model).__name__} is not one: use --backend onnx or tensorrt")
    return bert, classifier, {"head": "classifier", "num_labels": int(model.config.num_labels)}


def convert(module):
    """engines/torch_bert.py's (BertShape, state dict) for the reference module, in fp32."""
    import torch

    from engines.torch_bert import ACTIVATIONS, BertShape

    bert, classifier, head = _parts(module)
    c = bert.config
    positions = getattr(c, "position_embedding_type", "absolute")
    unsupported = [what for what, bad in ((f"model_type {c.model_type!r}", c.model_type != "bert"),
                                          (f"position_embedding_type {positions!r}", positions != "absolute"),
                                          (f"hidden_act {c.hidden_act!r}", c.hidden_act not in ACTIVATIONS)) if bad]
    if unsupported:
        raise ArtifactError(f"backend torch-cuda implements BERT (model_type 'bert', absolute positions, hidden_act "
                            f"one of {sorted(ACTIVATIONS)}); this model has {', '.join(unsupported)}: use --backend "
                            "onnx or tensorrt")
    shape = BertShape(vocab_size=c.vocab_size, hidden_size=c.hidden_size, num_hidden_layers=c.num_hidden_layers,
                      num_attention_heads=c.num_attention_heads, intermediate_size=c.intermediate_size,
                      max_position_embeddings=c.max_position_embeddings, type_vocab_size=c.type_vocab_size,
                      layer_norm_eps=c.layer_norm_eps, hidden_act=c.hidden_act, **head)
    s = bert.state_dict()
    state = {f"{ours}.{k}": s[f"embeddings.{theirs}.{k}"]
             for ours, theirs in EMBEDDINGS.items() for k in ("weight", "bias") if f"embeddings.{theirs}.{k}" in s}
    for i in range(c.num_hidden_layers):
        at = f"encoder.layer.{i}."
        for k in ("weight", "bias"):
            state[f"layers.{i}.qkv.{k}"] = torch.cat([s[f"{at}attention.self.{n}.{k}"] for n in ("query", "key", "value")])
            state.update({f"layers.{i}.{ours}.{k}": s[f"{at}{theirs}.{k}"] for ours, theirs in LAYER.items()})
    if classifier is not None:
        for k in ("weight", "bias"):
            state[f"pooler.{k}"] = s[f"pooler.dense.{k}"]
            state[f"classifier.{k}"] = classifier.state_dict()[k]
    return shape, {k: v.detach().clone().contiguous() for k, v in state.items()}


class _Module:
    """engines.parity.check's view of an in-memory module: `infer(feed)` on the CPU."""

    def __init__(self, model):
        self.model = model

    def infer(self, feed):
        import torch

        with torch.inference_mode():
            return self.model(*(torch.from_numpy(feed[k]) for k in parity.INPUTS)).numpy()


class TorchCudaStage(AcceleratedStage):
    implementation: dict  # export's fp32 check of the conversion, added to validate's record

    def export(self, job: CompileJob) -> dict:
        import torch

        from engines import torch_bert

        super().export(job)  # the probes and their transformers outputs, for the gate on the worker's GPU
        shape, state = convert(job.module)
        model = torch_bert.Bert(shape)
        model.load_state_dict(state)
        record = parity.check(job.module, _Module(model.eval()), job.tokenizer, job.task, "fp32", job.max_seq_len)
        if not record["passed"]:
            raise ParityError(f"engines/torch_bert.py disagrees with transformers on this model in fp32, so it uses "
                              f"something torch-cuda does not implement (use --backend onnx or tensorrt): {record}")
        self.implementation = record
        model.encoder_to(torch_bert.DTYPES[job.precision])
        (job.work / torch_bert.CONFIG_FILE).parent.mkdir(parents=True, exist_ok=True)
        (job.work / torch_bert.CONFIG_FILE).write_text(shape.to_json())
        torch.save(model.state_dict(), job.work / torch_bert.WEIGHTS_FILE)
        from engines.torch_cuda import MIN_COMPUTE_CAPABILITY, TORCH_MIN

        return {"device": "cuda", "runtime": "torch", "torch_min": ".".join(map(str, TORCH_MIN)),
                "compiled_with_torch": importlib.metadata.version("torch"), "precision": job.precision,
                "min_compute_capability": list(MIN_COMPUTE_CAPABILITY[job.precision])}

    def validate(self, job: CompileJob, manifest) -> tuple[dict, list[str]]:
        """The written artifact in its precision through the engine and its load-time gate, on this
        machine's GPU where it has one, else on its CPU."""
        import torch

        from engines.base import Device
        from engines.torch_cuda import TorchCudaEngine

        device = Device("cuda", "0") if torch.cuda.is_available() else Device("cpu")
        with TorchCudaEngine(job.work, manifest, device) as engine:
            record = dict(engine.parity_record or {})
        record["implementation_fp32"] = self.implementation
        record["where"] = f"{device} at compile time; each worker re-checks on its own device at load"
        return record, []
