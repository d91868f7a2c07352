"""`kvreport audit`: token audits of LLM traffic logs (PCER, SPOR, KV footprint and leakage, bloat)."""
from __future__ import annotations

import contextlib
import datetime as _dt
import math
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Annotated

import duckdb
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..audit import guardrails, remote
from ..audit.dollars import load_prices_file, prefetch
from ..audit.engine import AuditOptions, next_audit_id, persist, run_audit
from ..audit.ingest import FORMATS, Keys, detect, expand_paths, json_keys
from ..audit.kv_pricing import DEFAULT_GPU, UNPRICED_NOTICE, given, gpu_memory, kv_pricing
from ..audit.tokenizer import load_tokenizer
from ..core.errors import UserError
from ..core.connections import connect
from ..core.errors import shown
from ..core.scratch import new_db_file, scratch_dir
from ..core.store import Store

# DuckDB's share of memory. The whole process peaks about 150 MB above it (Python, imports, what DuckDB does
# not count), so a 1M-call audit stays under 500 MB; beyond the limit DuckDB spills to the scratch folder.
DEFAULT_MEMORY_LIMIT = "350MB"


def _mb(v) -> str:
    return "–" if v is None else f"{v / 1e6:,.1f} MB"


def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _number(option: str, value: float, low: float, high: float | None = None, low_open: bool = False,
            unit: str = "") -> float:
    """A finite option value in range, else a UserError naming the option (nan and inf are not numbers
    here: a NaN stored in the DB would break every later build)."""
    ok = math.isfinite(value) and (value > low if low_open else value >= low) and (high is None or value <= high)
    if not ok:
        bound = f"{'>' if low_open else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")
        raise UserError(f"{option} {value}: must be a finite number {bound} ({unit})")
    return float(value)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|bytes?|kb|kib|mb|mib|gb|gib|tb|tib)\s*$", re.IGNORECASE)


_MIN_MEMORY = 64e6  # DuckDB refuses less than it already holds, and an audit needs room for its buffers


def _memory_limit(value: str | None) -> str | None:
    """--memory-limit as DuckDB takes it: a positive size with a unit (350MB, 2GB, 1.5GiB)."""
    if value is None:
        return None
    m = _SIZE.match(str(value))
    if not m or float(m.group(1)) <= 0:
        raise UserError(f"--memory-limit {value!r}: not a size; give a positive number with a unit, "
                        "e.g. 350MB or 2GB")
    unit = m.group(2).lower().rstrip("s")
    scale = {"b": 1, "byte": 1, "kb": 1e3, "kib": 2**10, "mb": 1e6, "mib": 2**20, "gb": 1e9, "gib": 2**30,
             "tb": 1e12, "tib": 2**40}[unit]
    if float(m.group(1)) * scale < _MIN_MEMORY:
        raise UserError(f"--memory-limit {value!r}: too small to audit in; give at least 64MB")
    return f"{m.group(1)}{m.group(2).upper()}"


def _store(con, result, db: Path) -> None:
    """persist, with a failure (a full disk, a read-only folder) named for the DB file."""
    try:
        persist(con, result)
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None
    except (duckdb.Error, OSError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserError(f"{shown(db)}: cannot store the audit ({first}); nothing was stored") from None


def _utc(option: str, value: str | None) -> _dt.datetime | None:
    """An ISO-8601 time from the command line as naive UTC (what the audit's times are); no offset: UTC."""
    if value is None:
        return None
    try:
        t = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise UserError(f"{option} {value!r}: not a time (ISO 8601, e.g. 2026-11-01 or 2026-11-01T12:00:00+01:00)") \
            from None
    return t.astimezone(_dt.timezone.utc).replace(tzinfo=None) if t.tzinfo else t


@contextlib.contextmanager
def _progress(n_files: int, enabled: bool | None, con):
    """Files done, lines per second and how far DuckDB is through the current statement, on stderr, only
    when it is a terminal (enabled None: auto). Yields the audit's per-file callback, or None."""
    if not (sys.stderr.isatty() if enabled is None else enabled):
        yield None
        return


    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True, force_terminal=enabled), transient=True) as bar:
        task = bar.add_task("reading", total=n_files)
        now = {"what": "reading", "done": ""}
        stop = threading.Event()

        def show(pct: float = -1) -> None:
            bar.update(task, description=now["what"] + (f" {pct:.0f}%" if pct >= 0 else "") + now["done"])

        def on_file(i: int, n: int, src, lines: int | None, seconds: float | None) -> None:
            if lines is None:
                now["what"] = f"reading {src.path.name} ({i}/{n})"
            else:
                now["done"] = f"; read {src.path.name}: {lines:,} lines, {lines / max(seconds, 1e-9):,.0f} lines/s"
                now["what"] = "auditing" if i == n else now["what"]
                bar.update(task, completed=i)
            show()

        def poll() -> None:  # a long file is one statement: DuckDB says how far through it is
            while not stop.wait(0.5):
                show(con.query_progress())

        con.execute("SET enable_progress_bar = true")  # DuckDB tracks progress only when asked to,
        con.execute("SET enable_progress_bar_print = false")  # and must not draw its own bar
        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        try:
            yield on_file
        finally:
            stop.set()
            poller.join()


def execute(paths: list[Path], fmt: str = "auto", model: str | None = None, db: Path = Path("kvreport.duckdb"),
            tokenizer: str | None = None, idle_timeout: float = 300.0, strict: bool = False,
            spor_max: float = 0.85, kv_max_mb: float | None = None, memory_limit: str | None = DEFAULT_MEMORY_LIMIT,
            echo=typer.echo, prices: Path | None = None, gpu_hour_price: float | None = None,
            session_keys: list[str] | tuple[str, ...] = (), time_key: str | None = None,
            since: str | None = None, until: str | None = None, progress: bool | None = None,
            ray: str | None = None, ray_workers: int | None = None, ray_scratch: Path | None = None,
            ray_partitions: int | None = None, ray_info: dict | None = None, gpu: str = DEFAULT_GPU,
            kv_bytes_per_token: float | None = None) -> dict:
    """The whole audit; returns the audits row. Separate from the typer function so tests and the
    benchmark can call it in-process. `ray`: run it as Ray tasks ("local": a Ray of ray_workers CPUs started
    here; "auto", ray://HOST:10001: that cluster); `ray_info`, if given, gets the Ray run's task times."""


    if fmt not in FORMATS:
        raise UserError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    idle_timeout = _number("--idle-timeout", idle_timeout, low=0, low_open=True, unit="seconds")
    spor_max = _number("--spor-max", spor_max, low=0, high=1, unit="a share of input tokens, 0 to 1")
    kv_max_mb = None if kv_max_mb is None else _number("--kv-max-mb", kv_max_mb, low=0, unit="MB")
    if gpu_hour_price is not None:
        gpu_hour_price = _number("--gpu-hour-price", gpu_hour_price, low=0, unit="USD per GPU-hour")
    memory_limit = _memory_limit(memory_limit)
    memory = gpu_memory(gpu)
    if kv_bytes_per_token is not None:
        kv_bytes_per_token = _number("--kv-bytes-per-token", kv_bytes_per_token, low=0, low_open=True,
                                     unit="bytes of KV cache per token")
        if model is not None:
            raise UserError("give --model or --kv-bytes-per-token, not both: each sets the KV bytes per token")
    elif model is None:
        echo(UNPRICED_NOTICE)  # said once, before the audit: no model is guessed (kv_pricing.UNPRICED)
    if not paths:
        raise UserError("give at least one log file")
    paths = _log_files(paths, db)  # folders, quoted globs, s3:// prefixes and globs
    window = _utc("--since", since), _utc("--until", until)
    if window[0] and window[1] and window[0] >= window[1]:
        raise UserError(f"--since {since} is not before --until {until}")
    if ray is not None:
        from ..audit import distributed  # only with --ray: it brings Ray (the optional [ray] extra)

        distributed.check_address(ray)
        if ray_workers is not None and ray_workers < 1:
            raise UserError(f"--ray-workers {ray_workers}: must be >= 1")
        distributed.import_ray()  # before the DB is opened: no Ray, nothing written
    tok = load_tokenizer(tokenizer) if tokenizer else None
    book = load_prices_file(prices) if prices else None  # a bad price file fails before anything is read
    limit = guardrails.kv_limit(kv_max_mb, memory)
    opts = AuditOptions(fmt=fmt, idle_timeout_s=idle_timeout, spor_max=spor_max, kv_max_mb=limit.mb,
                        kv_max_basis=limit.basis,
                        memory_limit=memory_limit, price_book=book, gpu_hour_price=gpu_hour_price)

    # The scratch folder (spilled blocks, normalised copies, the copies of s3:// objects) outlives the DB
    # connection: see workdir. Its name carries our PID, so the next audit removes it if this one is killed.
    # On a Ray cluster it lies in --ray-scratch, where every node reads it.
    if ray and ray_scratch:
        Path(ray_scratch).mkdir(parents=True, exist_ok=True)
    work = scratch_dir("audit", parent=ray_scratch if ray else None)
    try:
        paths, origins = _staged(paths, str(work))
        # Check every file (exists, readable, a format we know) before the DB is even opened.
        probe = connect()
        try:
            opts.keys = Keys(json_keys(probe, "--session-key", session_keys),
                             json_keys(probe, "--time-key", [] if time_key is None else [time_key]))
            for p in paths:
                detect(probe, Path(p), fmt)
        finally:
            probe.close()
        prefetch()
        opts.workdir = str(work)
        opts.since, opts.until = window
        # A new DB file is written under a temporary name beside it and linked into place only when the audit
        # is stored: a failed or killed audit leaves no DB file, and two audits creating the same file never
        # remove each other's (the one that finishes second says so and stores nothing).
        target = new_db_file(db) if not Path(db).exists() else contextlib.nullcontext(Path(db))
        with target as path:
            try:
                with Store(path) as store, \
                        _progress(len(paths), False if ray else progress, store.con) as opts.on_file:
                    con = store.con
                    pricing = given(kv_bytes_per_token) if kv_bytes_per_token is not None else kv_pricing(model, con)
                    audit_id = next_audit_id(con)
                    args = dict(audit_id=audit_id, run_id=None, model=model, pricing=pricing, memory=memory,
                                tokenizer=tok, strict=strict, origins=origins)
                    # No engine.cleanup here: closing the Store's connection, right after, drops the whole
                    # scratch catalog and rolls back an unfinished transaction (dropping it first cost 0.07 s).
                    if ray is None:
                        result = run_audit(con, paths, opts, **args)
                        _store(con, result, db)
                    else:
                        result = _ray_audit(con, paths, opts, args, ray, ray_workers, ray_scratch,
                                            ray_partitions, tokenizer, progress, ray_info, db)
            except duckdb.InterruptException:
                raise KeyboardInterrupt from None
            except UserError as exc:
                if path == Path(db):
                    raise
                raise type(exc)(str(exc).replace(str(path), str(db))) from None  # name the user's file, not ours
    finally:
        shutil.rmtree(work, ignore_errors=True)
    s = result.summary
    echo(f"{audit_id}: {s['n_calls']:,} calls in {s['n_sessions']:,} sessions from {len(result.sources)} file(s) "
         f"({s['format']}) -> {db}")
    echo(f"  KV pricing: {s['kv_bytes_detail']}")
    if unnamed := result.unnamed_calls:  # PCER "per session" of such a call is the call's own
        echo(f"  sessions: {unnamed:,} of {s['n_calls']:,} call(s) named no session, so each is its own session and "
             "its per-session PCER is per call (give --session-key PATH)")
    echo(f"  PCER (cached / total input, token-weighted): {_pct(s['overall_pcer'])}")
    spor = _pct(s["overall_spor"])
    echo(f"  SPOR (system / total input): {spor}" + (f" ({s['spor_reason']})" if s["spor_reason"] else ""))
    leak = _pct(s["leakage_index"])
    echo(f"  KV leakage index (idle > {idle_timeout:g}s share of KV byte-seconds): {leak}"
         + (f" ({s['leakage_reason']})" if s["leakage_reason"] else ""))
    for line in guardrails.lines(s):
        echo(line)
    _echo_cost(s, echo)
    if s["n_rejects"]:
        echo(f"  rejected: {s['n_rejects']:,} record(s) (all in token_rejects), e.g.:")
        for r in result.rejects[:5]:
            echo(f"    {r['source']}:{r['line']}: {r['reason']}")
    else:
        echo("  rejected: 0 records")
    if s.get("n_skipped_lines"):
        echo(f"  skipped: {s['n_skipped_lines']:,} line(s): blank" + (", or calls outside --since/--until"
                                                                     if since or until else "")
             + (", or Langfuse observations that are not generations (spans, events, ...)"
                if any(src.fmt == "langfuse" for src in result.sources) else ""))
    return s


def _log_files(args: list, db: Path) -> list:
    """The command line's logs in order, each once: local files (ingest.expand_paths) and s3:// URLs (listed,
    not read: remote.expand)."""
    out: dict = {}  # a local file's resolved path (or a URL) -> the file as named: each file once
    for arg in args:
        url = remote.url_of(arg)
        found = remote.expand(url) if url else expand_paths([arg], exclude=(Path(db), Path(str(db) + ".wal")))
        for f in found:
            out.setdefault(f if url else os.path.realpath(f), f)
    return list(out.values())


def _staged(paths: list, folder: str) -> tuple[list[Path], dict[Path, str]]:
    """`paths` with each s3:// URL replaced by a local copy in `folder`; and the URL of each copy."""
    urls = [p for p in paths if remote.url_of(p)]
    if not urls:
        return [Path(p) for p in paths], {}
    copies = remote.stage(urls, folder)
    local = {url: path for path, url in copies.items()}
    return [local[p] if p in local else Path(p) for p in paths], copies


def _ray_audit(con, paths, opts, args: dict, address: str, workers, scratch, partitions, tokenizer_path, progress,
               info: dict | None, db: Path):
    """The audit as Ray tasks (runner/audit/distributed.py), stored in one transaction like the other."""
    from ..audit.distributed import Cluster  # only with --ray: the optional [ray] extra

    with _ray_progress(progress) as on_progress, \
            Cluster(address, workers, scratch, partitions, on_progress=on_progress) as cluster:
        result = cluster.run_audit(con, paths, opts, tokenizer_path=tokenizer_path, **args)
        started = time.perf_counter()
        _store(con, result, db)  # the calls and rejects come straight from the scratch Parquet, so before it goes
        cluster.run_info.phase_seconds["persist"] = time.perf_counter() - started
    if info is not None:
        info["run"] = cluster.run_info
    return result


@contextlib.contextmanager
def _ray_progress(enabled: bool | None):
    """Files mapped and partitions reduced, with calls per second, on stderr when it is a terminal."""
    if not (sys.stderr.isatty() if enabled is None else enabled):
        yield None
        return

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True, force_terminal=enabled), transient=True) as bar:
        tasks: dict[str, int] = {}

        def on_progress(p) -> None:
            if p.phase not in tasks:
                tasks[p.phase] = bar.add_task(p.phase, total=p.total)
            rate = f": {p.calls:,} calls, {p.calls / max(p.seconds, 1e-9):,.0f} calls/s" if p.calls else ""
            bar.update(tasks[p.phase], completed=p.done, total=p.total, description=p.phase + rate)

        yield on_progress


def _usd(v) -> str:
    return "n/a" if v is None else f"${v:,.4f}" if abs(v) < 100 else f"${v:,.2f}"


def _echo_cost(s: dict, echo) -> None:
    echo(f"  cost: {_usd(s['cost_usd'])} for {s['priced_calls']:,} priced call(s)"
         + (f" (prices: {s['price_source']}, as of {s['price_snapshot_date']})" if s["price_source"] else ""))
    if s["unpriced_calls"]:
        echo(f"  unpriced (no price known, not guessed): {s['unpriced_calls']:,} call(s): {s['unpriced_models']}")
    if s["whatif_achievable_usd"] is not None and s["whatif_nocache_usd"]:
        base = s["whatif_nocache_usd"]
        echo(f"  what-if on {s['whatif_calls']:,} call(s): no caching {_usd(base)}, actual {_usd(s['whatif_actual_usd'])}, "
             f"achievable PCER {_pct(s['whatif_achievable_pcer'])} {_usd(s['whatif_achievable_usd'])} "
             f"({_pct(1 - s['whatif_achievable_usd'] / base)} saved), stable prefix "
             f"{_usd(s['whatif_stable_usd'])} ({_pct(1 - s['whatif_stable_usd'] / base)} saved)")
    else:
        echo(f"  what-if savings: n/a ({s['whatif_reason']})")
    if s["idle_cost_usd"] is not None:
        echo(f"  idle KV memory: {s['idle_gpu_hours']:,.3f} GPU-hours = {_usd(s['idle_cost_usd'])} "
             f"at ${s['gpu_hour_price_usd']:g}/GPU-hour ({s['gpu_cost_reason']})")


def audit(
    paths: Annotated[list[Path], typer.Argument(help="Log files (shapes: see --format): API responses, batch "
                                                     "results, LiteLLM and Langfuse logs, OpenTelemetry exports, "
                                                     "session records. Folders (every file in them) and quoted "
                                                     "globs ('logs/2026-11-*.jsonl.gz') too; .gz and .zst are "
                                                     "read as they are.")],
    format: Annotated[str, typer.Option("--format", help="auto (exact: a record two formats accept is an error), "
                                                         "sessions, openai, anthropic (JSONL envelopes), otel, "
                                                         "openai-chat, openai-response, anthropic-message (bare API "
                                                         "objects), openai-batch, anthropic-batch (batch results), "
                                                         "litellm, langfuse.")] = "auto",
    model: Annotated[str | None, typer.Option(help="Open model whose KV bytes/token price the tokens (measured at "
                                                   "16 bits in the DB if there, else the formula at 16 bits). "
                                                   "Without it (or --kv-bytes-per-token) KV is not priced.")] = None,
    kv_bytes_per_token: Annotated[float | None, typer.Option(help="KV cache bytes per token, instead of --model "
                                                                  "(e.g. for an API model).")] = None,
    db: Annotated[Path, typer.Option(help="DuckDB file to store the audit in.")] = Path("kvreport.duckdb"),
    tokenizer: Annotated[str | None, typer.Option(help="Local tokenizer.json (or folder) to count tokens in logged "
                                                       "message content. Never downloads.")] = None,
    idle_timeout: Annotated[float, typer.Option(help="Seconds after its last activity a session counts as idle "
                                                     "(leaked KV).")] = 300.0,
    strict: Annotated[bool, typer.Option("--strict", help="Fail (store nothing) if any record is rejected.")] = False,
    spor_max: Annotated[float, typer.Option(help="Guardrail: warn when a session's SPOR exceeds this.")] = 0.85,
    kv_max_mb: Annotated[float | None, typer.Option(help="Guardrail: warn when a session's KV footprint exceeds "
                                                         "this many MB (10^6 bytes). Default: 1/max_num_seqs of "
                                                         "--gpu's memory (vLLM's default batch; the token-audit "
                                                         "article used 15).")] = None,
    memory_limit: Annotated[str, typer.Option(help="DuckDB memory limit while auditing (it spills to disk "
                                                   "beyond it); the process peaks about 150 MB above it.")
                            ] = DEFAULT_MEMORY_LIMIT,
    prices: Annotated[Path | None, typer.Option(help="TOML or JSON file of USD-per-million-token rates that "
                                                     "override genai-prices (negotiated prices, self-hosted "
                                                     "models).")] = None,
    gpu_hour_price: Annotated[float | None, typer.Option(help="USD per GPU-hour: turns idle KV memory (and what "
                                                              "each TTL frees) into GPU-hours and dollars.")] = None,
    gpu: Annotated[str, typer.Option(help="The GPU idle KV, the TTL sweep and the KV guardrail are set against: "
                                          "its whole memory (weights not subtracted). H100, H200, or any name with a "
                                          "size: "
                                          "'A100 40GB', '48GB'.")] = DEFAULT_GPU,
    session_key: Annotated[list[str] | None, typer.Option(
        "--session-key", help="JSON path of the session id in each record, e.g. metadata.conversation_id or "
                              "'request.headers.\"x-session-id\"'. Repeatable: the first non-null wins. Replaces "
                              "the format's own session fields; a call with none is its own session.")] = None,
    time_key: Annotated[str | None, typer.Option(
        "--time-key", help="JSON path of each call's time (ISO-8601 or Unix s/ms/us/ns), replacing the format's "
                           "own.")] = None,
    since: Annotated[str | None, typer.Option(help="Audit only calls at or after this time (ISO 8601; no offset: "
                                                   "UTC). Calls outside the window, or without a time, are "
                                                   "skipped.")] = None,
    until: Annotated[str | None, typer.Option(help="Audit only calls before this time (ISO 8601; no offset: "
                                                   "UTC).")] = None,
    ray: Annotated[str | None, typer.Option(
        "--ray", metavar="ADDRESS",
        help="Run the audit as Ray tasks (pip install 'kvreport[ray]'), with the same results: 'local' starts a "
             "Ray on this machine; 'auto' or ray://HOST:10001 use that cluster.")] = None,
    ray_workers: Annotated[int | None, typer.Option(help="CPUs of the local Ray that --ray starts (default: all "
                                                         "of this machine's).")] = None,
    ray_scratch: Annotated[Path | None, typer.Option(help="Folder for --ray's intermediate Parquet (removed "
                                                          "afterwards); on a multi-node cluster one every node "
                                                          "mounts. Default: the system temp folder.")] = None,
):
    """Audit LLM traffic logs: PCER, SPOR, KV-cache footprint and leakage, TTL eviction, prompt bloat."""
    execute(paths, format, model, db, tokenizer, idle_timeout, strict, spor_max, kv_max_mb, memory_limit,
            prices=prices, gpu_hour_price=gpu_hour_price, session_keys=session_key or (), time_key=time_key,
            since=since, until=until, ray=ray, ray_workers=ray_workers, ray_scratch=ray_scratch, gpu=gpu,
            kv_bytes_per_token=kv_bytes_per_token)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
