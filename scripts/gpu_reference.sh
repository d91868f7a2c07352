#!/usr/bin/env bash
# The reference GPU run, under ONE outer time limit (LIMIT_S, default 540 s): the whole suite for gpt2 at
# float16, the compaction benchmark (every method against the same-size copy roof, the triton target), and
# the whole suite for one GQA architecture at bfloat16, appended to a copy of the published DB. Everything
# lands under $OUT (DB, log, benchmark table); the headline table is printed last.
#   OUT=/some/folder bash scripts/gpu_reference.sh [GQA_MODEL]
# Rehearsal on a CPU (small models, quick sweeps, same steps and limits):
#   OUT=/tmp/ref DEVICE=cpu QUICK=1 GPT2_MODEL=tiny-gpt2 bash scripts/gpu_reference.sh tiny-llama-gqa
# On the project's lent GPU box (no registry) run ../shared/gpu/wheels.sh here first and carry .whl/.
# Each step gets the smaller of its own cap and the time left (minus a reserve for the headline table), so
# one slow step cannot cost the others' results; SIGTERM marks a run 'interrupted' and keeps every
# experiment already recorded. Clocks, power limits and the GPU's settings are never touched.
# It first checks that every package the run imports does (the carried wheels included), and lists the
# experiments that failed (not skipped) before the headline table, so missing figures are never silent.
set -uo pipefail
cd "$(dirname "$0")/.."
LIMIT_S=${LIMIT_S:-540}
if [ -z "${KVREPORT_REF_INNER:-}" ]; then  # the outer hard stop, around everything below
  KVREPORT_REF_INNER=1 exec timeout -k 5 "$LIMIT_S" bash "$0" "$@"
fi
start=$(date +%s)
OUT=${OUT:-out}
DEVICE=${DEVICE:-cuda}
GPT2_MODEL=${GPT2_MODEL:-gpt2}
GQA_MODEL=${1:-llama-3.1-8b}
QUICK_FLAG=${QUICK:+--quick}
RESERVE_S=25  # findings + the headline table
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# No install on the lent box: the checkout's folders become the kvreport namespace through symlinks.
pkg=$(mktemp -d)
mkdir -p "$pkg/kvreport"
for d in runner analysis templates; do ln -s "$PWD/$d" "$pkg/kvreport/$d"; done
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$pkg
else
  export PYTHONPATH=$pkg${PYTHONPATH:+:$PYTHONPATH}
fi
# Before anything is measured: everything the run imports must import (the carried duckdb and plotly
# wheels, the machine's own torch, transformers and triton), or the run stops here with the reason.
python3 - <<'PY' || { echo "== stopped: a package the run needs does not import (see above)"; rm -rf "$pkg"; exit 1; }
import importlib
missing = []
for name in ("duckdb", "plotly", "torch", "transformers", "typer", "jinja2", "triton", "kvreport.runner.cli"):
    try:
        mod = importlib.import_module(name)
        print(f"  {name} {getattr(mod, '__version__', '')} from {getattr(mod, '__file__', '?')}")
    except Exception as exc:  # noqa: BLE001 - each missing package is listed
        missing.append(f"{name}: {type(exc).__name__}: {exc}")
for line in missing:
    print(f"  cannot import {line}")
raise SystemExit(1 if [m for m in missing if not m.startswith("triton:")] else 0)  # no triton: its methods skip
PY
DB="$OUT/kvreport.duckdb"
[ -f "$DB" ] || cp site/data/kvreport.duckdb "$DB"
log="$OUT/reference.log"
first_run=$(python3 -c "import duckdb, sys; print(duckdb.connect(sys.argv[1], read_only=True).execute('SELECT coalesce(max(run_id), 0) FROM runs').fetchone()[0])" "$DB") || first_run=0

left() {  # seconds a step may take: its cap, or what is left before the reserve, whichever is smaller
  local cap=$1 rest=$(( LIMIT_S - RESERVE_S - ($(date +%s) - start) ))
  [ "$rest" -lt "$cap" ] && cap=$rest
  [ "$cap" -lt 1 ] && cap=1
  echo "$cap"
}
step() {  # step NAME CAP_S command...: runs under its limit and says how it ended
  local name=$1 cap; cap=$(left "$2"); shift 2
  echo "== $name (limit ${cap}s, $(( $(date +%s) - start ))s into the run)"
  timeout -k 10 "$cap" "$@"
  local rc=$?
  [ $rc -eq 124 ] && echo "== $name: stopped at its ${cap}s limit (recorded experiments are kept)"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && echo "== $name: exit status $rc"
  return 0
}

{
  if [ "$DEVICE" != cpu ]; then
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem,clocks.max.memory,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv || true
  fi
  step "$GPT2_MODEL suite" "${GPT2_LIMIT_S:-170}" python3 -m kvreport.runner run --model "$GPT2_MODEL" --dtype "$( [ "$DEVICE" = cpu ] && echo float32 || echo float16 )" --device "$DEVICE" $QUICK_FLAG --db "$DB" --label "reference $GPT2_MODEL"
  step "compaction benchmark" "${BENCH_LIMIT_S:-90}" sh -c "python3 benchmarks/bench_compaction.py --device $DEVICE --model $GPT2_MODEL ${QUICK:+--repeats 5} > '$OUT/bench_compaction.txt' 2>&1; rc=\$?; cat '$OUT/bench_compaction.txt'; exit \$rc"
  step "$GQA_MODEL suite" "${GQA_LIMIT_S:-330}" python3 -m kvreport.runner run --model "$GQA_MODEL" --dtype "$( [ "$DEVICE" = cpu ] && echo float32 || echo bfloat16 )" --device "$DEVICE" $QUICK_FLAG --db "$DB" --label "reference $GQA_MODEL"
  echo "suite wall time: $(( $(date +%s) - start )) s of ${LIMIT_S} s"
  echo "== failures (experiments of this script's runs that failed; skips are not failures)"
  python3 - "$DB" "$first_run" <<'PY' || echo "(could not read the DB's failures)"
import sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
rows = con.execute("SELECT r.run_id, r.model, e.experiment, e.reason FROM experiments e JOIN runs r USING (run_id) "
                   "WHERE e.run_id > ? AND e.status = 'failed' ORDER BY r.run_id, e.started_at",
                   [int(sys.argv[2])]).fetchall()
runs = con.execute("SELECT run_id, model, status FROM runs WHERE run_id > ? ORDER BY run_id", [int(sys.argv[2])]).fetchall()
for run_id, model, status in runs:
    print(f"run {run_id} ({model}): {status}")
for run_id, model, name, reason in rows:
    print(f"FAILED run {run_id} ({model}) {name}: {reason}")
print("no experiment failed" if not rows else f"{len(rows)} experiment(s) FAILED: their figures are missing below")
PY
  echo "== compaction benchmark (same-size copy roof)"
  tail -n 14 "$OUT/bench_compaction.txt" 2>/dev/null || echo "(no benchmark output)"
  echo "== headline findings"
  timeout -k 5 "$(( RESERVE_S - 5 ))" python3 -m kvreport.runner findings --db "$DB"
} 2>&1 | tee "$log"
rm -rf "$pkg"
