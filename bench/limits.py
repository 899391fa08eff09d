"""The machine's limit and the model's cost: fp32 GEMM peak on N cores, FLOPs per real token.

Useful FLOPs count real tokens only (padding is waste, not work), from the model's config:
per layer, 2·L·(4h² + 2hi) for the projections and the feed-forward, plus 4·L²·h for the
attention scores and their weighted sum, for a row of L tokens.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np


def model_shape(model_dir: Path) -> dict:
    cfg = json.loads((Path(model_dir) / "config.json").read_text())
    return {"layers": int(cfg["num_hidden_layers"]), "hidden": int(cfg["hidden_size"]),
            "intermediate": int(cfg["intermediate_size"]), "heads": int(cfg["num_attention_heads"])}


def row_flops(lengths: np.ndarray, shape: dict) -> float:
    """Useful FLOPs of encoding rows with these real token counts."""
    L = np.asarray(lengths, dtype=np.float64)
    h, i, n = shape["hidden"], shape["intermediate"], shape["layers"]
    return float(n * (2.0 * L.sum() * (4 * h * h + 2 * h * i) + 4.0 * (L * L).sum() * h))


def flops_per_token(shape: dict, length: int = 128) -> float:
    return row_flops(np.array([length]), shape) / length


def _gemm_worker(threads: int, sizes: tuple[int, ...], seconds: float, start, out) -> None:
    import torch

    torch.set_num_threads(threads)
    mats = {n: (torch.randn(n, n), torch.randn(n, n)) for n in sizes}
    for a, b in mats.values():
        a @ b
    start.wait()
    best = {}
    for n, (a, b) in mats.items():
        best[n], t_end = 0.0, time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            t0 = time.perf_counter()
            a @ b
            best[n] = max(best[n], 2.0 * n ** 3 / (time.perf_counter() - t0))
    out.put(best)


def gemm_peak(cores: int, sizes: tuple[int, ...] = (1024, 1536, 2048), seconds: float = 2.0) -> dict:
    """fp32 GEMM FLOP/s on `cores` cores: square torch.matmul (MKL/oneDNN) of a few sizes, run as
    one process per core and as one process with `cores` threads, all processes at once. The
    best of everything is the peak; every figure is recorded."""
    ctx = mp.get_context("spawn")
    result: dict = {"library": "torch.matmul fp32", "sizes": list(sizes)}
    for label, procs, threads in (("processes", cores, 1), ("threads", 1, cores)):
        start, out = ctx.Barrier(procs), ctx.Queue()
        workers = [ctx.Process(target=_gemm_worker, args=(threads, sizes, seconds, start, out)) for _ in range(procs)]
        for w in workers:
            w.start()
        per_proc = [out.get(timeout=600) for _ in workers]
        for w in workers:
            w.join()
        # Processes run the sizes in the same order at the same time, so per size they add up.
        by_size = {n: sum(p[n] for p in per_proc) / 1e9 for n in sizes}
        result[f"{label}_gflops"] = round(max(by_size.values()), 1)
        result[f"{label}_by_size"] = {str(n): round(v, 1) for n, v in by_size.items()}
    result["peak_gflops"] = max(result["processes_gflops"], result["threads_gflops"])
    return result
