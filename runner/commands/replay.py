"""`kvreport replay`: request traces through a block-level prefix cache (runner/replay/, no torch): hit rate
against capacity, the GPUs (and host memory) that reach a target share of the ceiling."""
from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated

import duckdb
import typer

from ..core import engine
from ..core.errors import UserError
from ..core.model_facts import BLOCK_TOKENS, DTYPE_BYTES, load
from ..core.errors import shown
from ..core.scratch import new_db_file
from ..core.store import Store
from ..replay.store import next_replay_id, persist
from ..replay.sweep import Setup, kv_pool, replay as run_replay
from .options import RATE_MAX, RATE_MIN, TOKENS_MAX, finite, size, token_counts, whole

DECODE_TOKENS_PER_S = 30.0  # an assumption, not a measurement: one stream at ~33 ms per output token


def _progress(enabled: bool):
    """A progress line on stderr (a terminal only): the pass, lines read and lines per second."""
    if not enabled:
        return None

    def show(name: str, lines: int, seconds: float) -> None:
        sys.stderr.write(f"\r{name}: {lines:,} lines, {lines / max(seconds, 1e-9):,.0f} lines/s   ")
        sys.stderr.flush()
    return show


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _print(result: dict, gpu: str, model: str) -> None:
    s, echo = result["setup"], typer.echo
    tp = s["tp"]
    goal = f"{result['target']:.0%} of its possible hit rate ({_pct(result['ceiling_hit_rate'])})"
    if result["gpus_for_target"]:
        echo(f"this traffic needs {result['gpus_for_target']} {gpu} GPU(s) (TP {tp}) for {goal} with {model}"
             f" ({_pct(result['at_target']['hit_rate'])} at that count)")
    else:
        echo(f"no GPU count up to {max(result['searched_gpus'])} reaches {goal} with {model}")
    if result["at_target_with_host"]:
        h = result["at_target_with_host"]
        echo(f"  with {s['host_bytes_per_gpu'] / 2**30:,.0f} GiB of host DRAM per GPU as an offload tier: "
             f"{h['gpus']} GPU(s) and {h['host_bytes'] / 2**30:,.0f} GiB of host DRAM")
    echo(f"{result['requests']:,} requests ({result['rejects']:,} rejected) from {len(s['sources'])} file(s), "
         f"{result['input_tokens']:,} prompt tokens; ceiling (unlimited capacity): "
         f"{_pct(result['ceiling_hit_rate'])} token-weighted, {result['ceiling_prefill_tokens_saved']:,} prefill "
         f"tokens saved, {result['ceiling_tokens']:,} tokens of distinct blocks (call-weighted, the mean of each "
         f"request's own share, for papers that average per request: {_pct(result['ceiling_call_weighted'])})")
    echo(f"  pool: {s['pool_blocks_per_group']:,} blocks of {s['engine_block_tokens']} tokens per TP group "
         f"({s['block_bytes_per_rank']:,} B per block per rank; {s['pool_basis']}); {s['block_mapping']}")
    echo(f"  requests hold their blocks for output / {s['decode_tokens_per_s']:g} tokens/s (assumed decode rate)")
    echo(f"{'capacity tokens':>16} {'GPUs':>6} {'hit rate':>9} {'prefill saved':>14} {'peak blocks':>12} "
         f"{'mean blocks':>12} {'evictions':>10} {'unadmitted':>10}")
    for p in result["curve"]:
        gpus = str(p["gpus"]) if p["gpus"] is not None else f"({p['gpus_needed']})"
        echo(f"{p['capacity_tokens']:>16,} {gpus:>6} {_pct(p['hit_rate']):>9} {p['prefill_tokens_saved']:>14,} "
             f"{p['peak_blocks']:>12,} {p['mean_blocks']:>12,.0f} {p['evictions']:>10,} {p['unadmitted']:>10,}")
    for t in result["ttl"]:
        echo(f"  TTL {t['ttl_s'] // 60} min, unlimited capacity: {_pct(t['hit_rate'])}, peak {t['peak_blocks']:,} "
             f"blocks ({t['peak_blocks'] * s['engine_block_tokens']:,} tokens), mean {t['mean_blocks']:,.0f}")
    for r in result["reject_lines"][:10]:
        typer.echo(f"reject: {r['file']}:{r['line']}: {r['field']}: {r['reason']}", err=True)
    if result["rejects"] > 10:
        typer.echo(f"reject: ... and {result['rejects'] - 10:,} more", err=True)


def replay(
    paths: Annotated[list[Path], typer.Argument(help="Trace files (JSON lines: Mooncake or Bailian shape).",
                                                show_default=False)],
    model: Annotated[str, typer.Option(help="Model: a catalogue name, a config.json or a folder with one.")],
    gpu: Annotated[str, typer.Option(help=f"GPU kind: {', '.join(engine.GPUS)} (memory as the device reports it).")]
        = "H200",
    gpu_memory: Annotated[str | None, typer.Option(help="GPU memory instead of --gpu, e.g. 141GB or 96GiB.")] = None,
    tp: Annotated[int, typer.Option(help="Tensor-parallel GPUs per replica.")] = 1,
    dtype: Annotated[str, typer.Option(help="KV cache and weight dtype.")] = "bfloat16",
    capacity_tokens: Annotated[str | None, typer.Option(help="Also replay pools of these sizes (tokens).")] = None,
    target: Annotated[float, typer.Option(help="Share of the unlimited-capacity hit rate to reach.")] = 0.9,
    host_memory: Annotated[str | None, typer.Option(help="Host DRAM per GPU for an offload tier, e.g. 256GiB.")] = None,
    block_tokens: Annotated[int, typer.Option(help="Engine block size in tokens (vLLM's default 16).")] = BLOCK_TOKENS,
    trace_block_tokens: Annotated[int | None, typer.Option(
        help="The trace's hash block size (default: 512 Mooncake, 16 Bailian).")] = None,
    decode_tokens_per_s: Annotated[float, typer.Option(
        help="Assumed decode rate per request: a request holds its blocks for output tokens / this.")] =
        DECODE_TOKENS_PER_S,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    db: Annotated[Path | None, typer.Option(help="Store the replay in this DuckDB file.")] = None,
    progress: Annotated[bool | None, typer.Option("--progress/--no-progress",
                                                  help="Progress line (default: on a terminal).")] = None,
):
    """Replay request traces through a block-level prefix cache: token-weighted hit rate against capacity
    (tokens, bytes, GPUs), the unlimited-capacity ceiling, TTL pools, and the smallest GPU count reaching
    --target of the ceiling."""
    whole("--tp", tp)
    if not 0 < target <= 1:
        raise UserError(f"--target {target}: expected a share in (0, 1]")
    whole("--block-tokens", block_tokens, high=TOKENS_MAX)
    if trace_block_tokens is not None:
        whole("--trace-block-tokens", trace_block_tokens, high=TOKENS_MAX)
    finite("--decode-tokens-per-s", decode_tokens_per_s, low=RATE_MIN, high=RATE_MAX, unit="tokens/s")
    if dtype not in DTYPE_BYTES:
        raise UserError(f"--dtype {dtype}: expected one of {', '.join(DTYPE_BYTES)}")
    if gpu_memory is not None:
        gpu_bytes, gpu_name = size("--gpu-memory", gpu_memory), f"{gpu_memory} GPU"
    else:
        gpu_bytes, gpu_name = engine.gpu_bytes(gpu), gpu.upper()
    for p in paths:
        if not p.is_file():
            raise UserError(f"{shown(p)}: not a readable file")
    host = size("--host-memory", host_memory) if host_memory else None
    facts = load(model)
    pool = kv_pool(facts, gpu_bytes, tp, dtype, block_tokens)
    setup = Setup(list(paths), pool, tp, block_tokens, trace_block_tokens, decode_tokens_per_s, target,
                  token_counts("--capacity-tokens", capacity_tokens, "1536000,5120000") if capacity_tokens else [],
                  host,
                  _progress(sys.stderr.isatty() if progress is None else progress))
    try:
        result = run_replay(setup)
    finally:
        if setup.progress is not None:
            sys.stderr.write("\n")
    trace_blocks = sorted({512 if k == "mooncake" else 16 for k in result["shapes"]}) \
        if trace_block_tokens is None else [trace_block_tokens]
    tb = trace_blocks[0] if trace_blocks else None
    mapping = (f"each {tb}-token trace block is {tb // block_tokens} engine blocks that hit or miss together"
               if tb and tb % block_tokens == 0 else
               f"{block_tokens // tb} trace blocks of {tb} tokens make one engine block" if tb else "")
    result["setup"] = {
        "sources": [str(p) for p in paths], "model": facts.name, "dtype": dtype, "gpu": gpu_name,
        "gpu_bytes": gpu_bytes, "tp": tp, "engine_block_tokens": block_tokens, "trace_block_tokens": tb,
        "block_mapping": mapping, "block_bytes_per_rank": pool.block_bytes_per_rank,
        "block_bytes_host": pool.block_bytes_host, "pool_blocks_per_group": pool.blocks_per_group,
        "pool_basis": pool.basis, "decode_tokens_per_s": decode_tokens_per_s, "host_bytes_per_gpu": host,
    }
    if db is not None:
        target_file = new_db_file(db) if not Path(db).exists() else contextlib.nullcontext(Path(db))
        with target_file as path, Store(path) as store:
            result["replay_id"] = next_replay_id(store.con)
            try:
                persist(store.con, result["replay_id"], result)
            except duckdb.InterruptException:
                raise KeyboardInterrupt from None
            except (duckdb.Error, OSError) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise UserError(f"{shown(db)}: cannot store the replay ({first}); nothing was stored") from None
    if as_json:
        typer.echo(json.dumps(result, indent=1))
    else:
        _print(result, gpu_name, facts.name)
        if db is not None:
            typer.echo(f"{result['replay_id']} -> {db}")


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)
