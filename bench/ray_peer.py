"""The Ray Data peer, run by the Ray venv's interpreter (bench/peers.py starts it).

    .venv-ray/bin/python bench/ray_peer.py --model MINILM_DIR --input sides.parquet --output out/ --cores 2

Reads `pair_id, left, right`, scores with `map_batches` over an actor class (one actor per
core, one torch thread each, 64-row batches padded to their longest row) and writes Parquet.
There is no warm-up pass: Ray Data keeps no actor pool between executions, so a measured pass
would start its actors (and load the model) again anyway. `seconds` is the steady state (first
batch started to last batch finished, over all actors); `seconds_with_actor_start` the whole pass.
Prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import time


class Scorer:
    def __init__(self, model_dir: str, batch: int):
        import torch
        from transformers import AutoModel, AutoTokenizer

        torch.set_num_threads(1)
        self.torch, self.batch = torch, batch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModel.from_pretrained(model_dir).eval()

    def _encode(self, texts):
        torch = self.torch
        enc = self.tokenizer(texts, padding="longest", truncation=True, max_length=256, return_tensors="pt")
        with torch.inference_mode():
            hidden = self.model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1).numpy()

    def __call__(self, batch):
        t0 = time.time()
        a = self._encode(batch["left"].tolist())
        b = self._encode(batch["right"].tolist())
        return batch[["pair_id"]].assign(score=(a * b).sum(1), _t0=t0, _t1=time.time())


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import ray

    t0 = time.perf_counter()
    # One logical CPU more than the cores: the actors hold one each for the model, and Ray Data's
    # read and write tasks need a slot too or they never get scheduled. The model still runs on
    # `cores` threads in all (one torch thread per actor).
    ray.init(num_cpus=args.cores + 1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    started = time.perf_counter() - t0
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False

    def dataset():
        # One small Parquet file is one block; split it so that every actor gets work.
        ds = ray.data.read_parquet(args.input).repartition(4 * args.cores)
        return ds.map_batches(Scorer, fn_constructor_args=(args.model, args.batch), batch_size=args.batch,
                              batch_format="pandas", concurrency=args.cores, num_cpus=1)

    t0 = time.perf_counter()
    scored = dataset().to_pandas()
    total = time.perf_counter() - t0
    steady = float(scored["_t1"].max() - scored["_t0"].min())
    spans = scored.drop_duplicates(["_t0", "_t1"])
    busy = float((spans["_t1"] - spans["_t0"]).sum())  # actor-seconds spent scoring
    shutil.rmtree(args.output, ignore_errors=True)  # a previous run's files would be read back too
    os.makedirs(args.output)
    scored.drop(columns=["_t0", "_t1"]).to_parquet(os.path.join(args.output, "part-0.parquet"), index=False)
    print(json.dumps({"seconds": round(steady, 3), "seconds_with_actor_start": round(total, 3),
                      "timing": "steady state: first batch started to last batch finished, over all actors",
                      "actors_busy": round(busy / steady, 2) if steady else None,
                      "ray_start_seconds": round(started, 3), "ray": ray.__version__, "output_path": args.output}))
    ray.shutdown()


if __name__ == "__main__":
    main()
