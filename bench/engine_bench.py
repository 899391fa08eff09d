"""The bare engine: the artifact's engine on texts tokenized, sorted and padded in advance.

Rows are split over P processes with T threads each (P x T = the cores); every process plans
the same length-sorted, token-budget device batches the job plans and pads them before the
clock starts; then all start together and only run the engine. Throughput is all rows over the
slowest process's time. The processes are started once and keep their loaded engines, so a
measurement costs its run, not a model load.
"""
from __future__ import annotations

import multiprocessing as mp
import time

import numpy as np


def _serve(commands, results) -> None:
    from engines.registry import engine_class
    from engines.store import open_artifact
    from udfs.batching import pad, plan_batches

    engines: dict = {}
    while True:
        job = commands.get()
        if job is None:
            break
        folder, backend, threads, ids, type_ids, token_budget = job
        key = (folder, backend, threads)
        if key not in engines:
            engines[key] = engine_class(backend)(folder, open_artifact(folder), threads=threads).load()
        engine = engines[key]
        spec = engine.spec
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        plan = plan_batches(lengths, token_budget, max_seq_len=spec.max_seq_len, pad_multiple=spec.pad_multiple,
                            buckets=spec.buckets, static=spec.static_shapes)
        feeds = [pad(ids, type_ids, b) for b in plan]
        if feeds:
            engine.infer(feeds[0])  # first run of a new shape allocates
        results.put("ready")
        commands.get()  # go
        t0 = time.perf_counter()
        for feed in feeds:
            engine.infer(feed)
        results.put({"seconds": time.perf_counter() - t0, "rows": len(ids), "real_tokens": int(lengths.sum()),
                     "padded_tokens": int(sum(b.padded_tokens for b in plan)), "batches": len(plan)})
    for engine in engines.values():
        engine.close()


class EnginePool:
    """`cores` worker processes that load engines once and run timed measurements on command."""

    def __init__(self, cores: int):
        ctx = mp.get_context("spawn")
        self.results = ctx.Queue()
        self.commands = [ctx.Queue() for _ in range(cores)]
        self.workers = [ctx.Process(target=_serve, args=(q, self.results), daemon=True) for q in self.commands]
        for w in self.workers:
            w.start()

    def run(self, folder: str, backend: str, shares: list[tuple[list, list]], *, threads: int,
            token_budget: int) -> dict:
        """One measurement: process p runs shares[p] = (ids, type_ids) with `threads` threads."""
        if len(shares) > len(self.workers):
            raise ValueError(f"{len(shares)} shares for {len(self.workers)} workers")
        for q, (ids, types) in zip(self.commands, shares):
            q.put((str(folder), backend, threads, ids, types, token_budget))
        for _ in shares:
            if self.results.get(timeout=1800) != "ready":
                raise RuntimeError("engine worker out of step")
        for q in self.commands[: len(shares)]:
            q.put("go")
        parts = [self.results.get(timeout=3600) for _ in shares]
        seconds = max(p["seconds"] for p in parts)
        rows = sum(p["rows"] for p in parts)
        real, padded = sum(p["real_tokens"] for p in parts), sum(p["padded_tokens"] for p in parts)
        return {"processes": len(shares), "threads": threads, "seconds": round(seconds, 3), "rows": rows,
                "rows_per_second": round(rows / seconds, 2), "real_tokens": real, "padded_tokens": padded,
                "padding_efficiency": round(real / padded, 4) if padded else None,
                "per_process_seconds": [round(p["seconds"], 3) for p in parts]}

    def best(self, folder: str, backend: str, ids: list, type_ids: list, *, token_budget: int,
             shares: list[tuple[list, list]] | None = None) -> dict:
        """One process per core with a thread each, and one process with all the cores' threads;
        the faster is the bare engine's best configuration. Rows are dealt round-robin (like a
        repartition) unless `shares` gives each per-core process its own."""
        cores = len(self.workers)
        shares = shares or [(ids[p::cores], type_ids[p::cores]) for p in range(cores)]
        runs = [self.run(folder, backend, shares, threads=1, token_budget=token_budget)]
        if cores > 1:
            all_ids = [x for s in shares for x in s[0]]
            all_types = [x for s in shares for x in s[1]]
            runs.append(self.run(folder, backend, [(all_ids, all_types)], threads=cores, token_budget=token_budget))
        top = min(runs, key=lambda r: r["seconds"])
        return {**top, "configs": [{k: r[k] for k in ("processes", "threads", "seconds", "rows_per_second")}
                                   for r in runs]}

    def close(self) -> None:
        for q in self.commands:
            q.put(None)
        for w in self.workers:
            w.join(timeout=60)

    def __enter__(self) -> "EnginePool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
