"""The machine's limit and the model's cost: fp32 GEMM peak on N cores, FLOPs per real token.

The ceiling is measured with the fastest GEMM at hand: torch.matmul (MKL/oneDNN) and ONNX
Runtime's own MatMul (MLAS, the kernels the CPU engine runs, which beat torch's on some CPUs:
a ceiling from torch alone once put the bare engine at 140% of "peak"). Beside it stands the
figure from the CPU's vector width and clock (`vector_bound`).

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


LIBRARIES = ("torch.matmul", "onnxruntime MatMul")


def _matmul(library: str, n: int, threads: int):
    """A callable that multiplies two fixed n x n fp32 matrices with `library` on `threads` threads."""
    if library == "torch.matmul":
        import torch

        torch.set_num_threads(threads)
        a, b = torch.randn(n, n), torch.randn(n, n)
        return lambda: a @ b
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"])], "matmul",
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [n, n]) for x in ("a", "b")],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = min(model.ir_version, 9)  # what the installed runtime can read
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {x: rng.standard_normal((n, n), dtype=np.float32) for x in ("a", "b")}
    return lambda: session.run(None, feeds)


def _gemm_worker(library: str, threads: int, sizes: tuple[int, ...], seconds: float, start, out) -> None:
    runs = {n: _matmul(library, n, threads) for n in sizes}
    for run in runs.values():
        run()
    start.wait()
    best = {}
    for n, run in runs.items():
        best[n], t_end = 0.0, time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            t0 = time.perf_counter()
            run()
            best[n] = max(best[n], 2.0 * n ** 3 / (time.perf_counter() - t0))
    out.put(best)


def gemm_peak(cores: int, sizes: tuple[int, ...] = (1024, 1536, 2048), seconds: float = 2.0) -> dict:
    """fp32 GEMM FLOP/s on `cores` cores, per library: square matrices of a few sizes, as one
    process per core and as one process with `cores` threads, all processes at once. The best
    of everything is the peak; every figure is recorded."""
    ctx = mp.get_context("spawn")
    result: dict = {"sizes": list(sizes), "libraries": {}}
    for library in LIBRARIES:
        got: dict = {}
        for label, procs, threads in (("processes", cores, 1), ("threads", 1, cores)):
            start, out = ctx.Barrier(procs), ctx.Queue()
            workers = [ctx.Process(target=_gemm_worker, args=(library, threads, sizes, seconds, start, out))
                       for _ in range(procs)]
            for w in workers:
                w.start()
            per_proc = [out.get(timeout=600) for _ in workers]
            for w in workers:
                w.join()
            # Processes run the sizes in the same order at the same time, so per size they add up.
            by_size = {n: sum(p[n] for p in per_proc) / 1e9 for n in sizes}
            got[f"{label}_gflops"] = round(max(by_size.values()), 1)
            got[f"{label}_by_size"] = {str(n): round(v, 1) for n, v in by_size.items()}
        result["libraries"][library] = got
    best = max(result["libraries"], key=lambda lib: max(result["libraries"][lib]["processes_gflops"],
                                                        result["libraries"][lib]["threads_gflops"]))
    result["library"] = best
    result["processes_gflops"] = result["libraries"][best]["processes_gflops"]
    result["threads_gflops"] = result["libraries"][best]["threads_gflops"]
    result["peak_gflops"] = max(result["processes_gflops"], result["threads_gflops"])
    return result


def vector_bound(cores: int, cpuinfo: str | None = None) -> dict:
    """fp32 FLOP/s from the CPU's vector width and clock on `cores` cores, stated beside the
    measured ceiling: fp32 lanes of the widest vector unit (16 with AVX-512, 8 with AVX2) x 2
    FLOPs per fused multiply-add x 2 FMA pipes x the clock /proc/cpuinfo reports. An estimate, not
    a hard limit: it assumes two full-width FMA pipes (AMD's Zen 4 runs a 512-bit FMA as two
    256-bit halves, half this), and a virtual machine's reported clock may be the base clock, below
    what turbo reaches."""
    text = cpuinfo if cpuinfo is not None else Path("/proc/cpuinfo").read_text()
    flags = set(next((l.split(":", 1)[1].split() for l in text.splitlines() if l.startswith("flags")), []))
    mhz = max((float(l.split(":", 1)[1]) for l in text.splitlines() if l.startswith("cpu MHz")), default=None)
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    if mhz is None:
        return {"fp32_lanes": lanes, "gflops": None}
    per_cycle = lanes * 2 * 2
    return {"fp32_lanes": lanes, "flops_per_cycle_per_core": per_cycle, "ghz": round(mhz / 1000, 3),
            "gflops": round(cores * per_cycle * mhz / 1000, 1)}
