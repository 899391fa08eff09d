#!/usr/bin/env bash
# Device check for the TensorRT backend, on one NVIDIA GPU, in under 8 minutes.
#
#   OUT=/some/folder bash bench/device_check.sh
#
# 1. records nvidia-smi and the Python environment;
# 2. installs only what is missing (tensorrt-cu12 in the range engines/trt_build.py supports, a
#    CUDA torch, transformers, onnx, onnxruntime, onnxscript, tokenizers, pyspark, pandas,
#    pyarrow) with pip, where the machine reaches a package index;
# 3. checks `import tensorrt` and `torch.cuda.is_available()`, and without them says in one
#    line what is missing and how to install it, and stops (exit 2);
# 4. runs `python -m bench.device_check`: TensorRT fp16 engines for MiniLM and a random-weight
#    BERT-base (two profiles, builder optimisation level 2), the graph through
#    `trtexec --stronglyTyped` where trtexec exists, parity with engines.parity (the gate the
#    engines use), engine-only and job throughput at seq 128, GPU memory per engine;
# 5. runs the gpu-marked pytest tests if time is left.
# Results: $OUT/device_check.json (rewritten after every stage; `figures` holds the numbers),
# $OUT/log.txt, $OUT/pytest-gpu.txt. Exit status: 0 when every parity gate passed and no stage
# failed; 2 when tensorrt or a CUDA torch is missing.
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/out/device_check}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
START=$(date +%s)
TOTAL_S="${DEVICE_CHECK_TOTAL_S:-460}"   # whole script; the harness allows 8 minutes
LOG="$OUT/log.txt"

log() { echo "[device_check +$(( $(date +%s) - START ))s] $*" | tee -a "$LOG" >&2; }
left() { echo $(( TOTAL_S - ($(date +%s) - START) )); }

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$(command -v "$PY")}"
export ACCEL_SCORING_CACHE="${ACCEL_SCORING_CACHE:-$OUT/cache}"
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

log "python: $(command -v "$PY") ($("$PY" -V 2>&1))"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || log "nvidia-smi failed (see nvidia-smi.txt)"
command -v java >/dev/null 2>&1 && java -version > "$OUT/java.txt" 2>&1 || log "no java: the job stage will fail"

# --- what is missing ------------------------------------------------------------------------
missing=$("$PY" - <<'EOF'
import importlib.util
from engines.trt_build import TENSORRT_REQUIREMENT
wanted = {"torch": "torch", "tensorrt": TENSORRT_REQUIREMENT, "transformers": "transformers>=4.45",
          "onnx": "onnx>=1.16", "onnxruntime": "onnxruntime>=1.20", "onnxscript": "onnxscript>=0.3",
          "tokenizers": "tokenizers>=0.19", "pyspark": "pyspark>=3.5,<3.6", "pandas": "pandas>=2,<3",
          "pyarrow": "pyarrow>=14,<21", "pytest": "pytest>=8"}
print(" ".join(spec for mod, spec in wanted.items() if importlib.util.find_spec(mod) is None))
EOF
)
if [ -n "$missing" ]; then
  log "installing: $missing"
  # shellcheck disable=SC2086
  timeout $(( $(left) / 2 )) "$PY" -m pip install -q $missing >> "$LOG" 2>&1 \
    || log "pip install failed (see log.txt); the check below says what is still missing"
fi
if ! ready=$("$PY" -m bench.device_check --preflight 2>> "$LOG"); then
  log "${ready:-python -m bench.device_check --preflight failed (see log.txt)}"
  "$PY" -c 'import json, sys; print(json.dumps({"passed": False, "errors": [sys.argv[1]]}))' "$ready" \
    > "$OUT/device_check.json"
  exit 2
fi
log "$ready"

# --- the check ----------------------------------------------------------------------------
budget=$(( $(left) - 90 ))     # leave room for the pytest stage and for writing results
[ "$budget" -lt 60 ] && budget=60
log "running bench.device_check with a ${budget}s stage budget"
timeout -k 10 $(( budget + 60 )) "$PY" -m bench.device_check --out "$OUT" --budget-s "$budget" \
  ${DEVICE_CHECK_ARGS:-} 2>> "$LOG"
rc=$?
log "bench.device_check exited $rc"

# --- gpu-marked contract tests, if there is time -------------------------------------------
if [ "$(left)" -gt 45 ] && "$PY" -c "import pytest" 2>/dev/null; then
  timeout -k 5 $(( $(left) - 15 )) "$PY" -m pytest -q -m gpu tests/test_tensorrt.py -p no:cacheprovider \
    > "$OUT/pytest-gpu.txt" 2>&1
  log "pytest -m gpu exited $? (see pytest-gpu.txt)"
else
  log "skipped pytest -m gpu: $(left)s left"
fi
exit "$rc"
