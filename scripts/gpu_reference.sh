#!/usr/bin/env bash
# The reference GPU run: the whole suite for gpt2 at float16 and one GQA architecture at bfloat16, appended
# to a copy of the published DB, with a log, ending with the headline figures. Usable on any CUDA machine:
#   OUT=/some/folder bash scripts/gpu_reference.sh [GQA_MODEL]
# On the project's lent GPU box (no registry) run ../shared/gpu/wheels.sh here first and carry .whl/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
GQA_MODEL=${1:-llama-3.1-8b}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
DB="$OUT/kvreport.duckdb"
[ -f "$DB" ] || cp site/data/kvreport.duckdb "$DB"
log="$OUT/reference.log"
start=$(date +%s)
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.memory --format=csv || true
  # Hard stops (expected on an H200: ~1.5 min for gpt2, ~3 min for the 8B model). SIGTERM marks the run
  # 'interrupted' and keeps every experiment already recorded, so one slow model cannot cost the whole log.
  timeout -k 20 "${GPT2_LIMIT_S:-210}" python3 -m runner run --model gpt2 --dtype float16 --device cuda --db "$DB" --label "reference gpt2 fp16"
  timeout -k 20 "${GQA_LIMIT_S:-330}" python3 -m runner run --model "$GQA_MODEL" --dtype bfloat16 --device cuda --db "$DB" --label "reference $GQA_MODEL bf16"
  echo "suite wall time: $(( $(date +%s) - start )) s"
  python3 -m runner findings --db "$DB"
} 2>&1 | tee "$log"
