"""The audit as a library call: `audit(paths, AuditRequest(...), db=..., on_event=...) -> AuditResult`.

An AuditRequest checks its values when it is made (a bad one raises UserError naming the option: one line and
exit 2 from the CLI). `audit` reads the logs, stores the audit in the DuckDB file and returns what it stored;
it prints nothing: what a user would be told goes to `on_event` (runner/core/events.py).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import math
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ..core.errors import UserError
from ..core.events import Event, Kind, OnEvent, ignore
from ..core.scratch import db_file
from ..core.store import Store, connect, scratch_dir, shown
from .formats import FORMATS
from .defaults import DEFAULT_GPU, DEFAULT_MEMORY_LIMIT
from .kv_pricing import UNPRICED_NOTICE, gpu_memory

# The engine, prices and tokenizers are imported by `audit` itself, not here: an audit that needs none of them
# should not pay for them.
_MIN_MEMORY = 64e6  # DuckDB refuses less than it already holds, and an audit needs room for its buffers
_MAX_MEMORY = 2**50  # 1 PiB: DuckDB refuses far larger sizes with a parser error
# Sanity ceilings far past any real setting (not facts): an absurd value (1e308) never becomes an overflow.
_MAX_SECONDS, _MAX_MB, _MAX_USD, _MAX_KV_BYTES, _MAX_WORKERS = 1e9, 1e9, 1e6, 2.0**30, 1024
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|bytes?|kb|kib|mb|mib|gb|gib|tb|tib)\s*$", re.IGNORECASE)


def _number(option: str, value: float, low: float, high: float | None = None, low_open: bool = False,
            unit: str = "") -> float:
    """A finite option value in range, else a UserError naming the option (nan and inf are not numbers
    here: a NaN stored in the DB would break every later build)."""
    ok = math.isfinite(value) and (value > low if low_open else value >= low) and (high is None or value <= high)
    if not ok:
        bound = f"{'>' if low_open else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")
        raise UserError(f"{option} {value}: must be a finite number {bound} ({unit})")
    return float(value)


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
    if float(m.group(1)) * scale > _MAX_MEMORY:
        raise UserError(f"--memory-limit {value!r}: more than any machine has; give at most 1 PiB")
    return f"{m.group(1)}{m.group(2).upper()}"


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


@dataclass(frozen=True)
class AuditRequest:
    """How to audit: the `kvreport audit` options, checked when made (a UserError naming the option).
    `ray`: run as Ray tasks ("local": a Ray of `ray_workers` CPUs started here; "auto", ray://HOST:10001: that
    cluster). Neither `model` nor `kv_bytes_per_token`: the KV cache is not priced (kv_pricing.UNPRICED).
    `kv_max_mb` None: the KV guardrail is relative to `gpu` (guardrails.kv_limit)."""
    fmt: str = "auto"
    model: str | None = None
    kv_bytes_per_token: float | None = None
    tokenizer: str | None = None
    idle_timeout: float = 300.0
    strict: bool = False
    spor_max: float = 0.85
    kv_max_mb: float | None = None
    memory_limit: str | None = DEFAULT_MEMORY_LIMIT
    prices: Path | None = None
    gpu_hour_price: float | None = None
    gpu: str = DEFAULT_GPU
    session_keys: tuple[str, ...] = ()
    time_key: str | None = None
    since: str | None = None
    until: str | None = None
    ray: str | None = None
    ray_workers: int | None = None
    ray_scratch: Path | None = None
    ray_partitions: int | None = None

    def __post_init__(self) -> None:
        def fix(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        if self.fmt not in FORMATS:
            raise UserError(f"--format {self.fmt}: expected one of {', '.join(FORMATS)}")
        fix("idle_timeout", _number("--idle-timeout", self.idle_timeout, low=0, high=_MAX_SECONDS,
                                                     low_open=True, unit="seconds"))
        fix("spor_max", _number("--spor-max", self.spor_max, low=0, high=1, unit="a share of input tokens, 0 to 1"))
        if self.kv_max_mb is not None:
            fix("kv_max_mb", _number("--kv-max-mb", self.kv_max_mb, low=0, high=_MAX_MB, unit="MB"))
        if self.gpu_hour_price is not None:
            fix("gpu_hour_price", _number("--gpu-hour-price", self.gpu_hour_price, low=0, high=_MAX_USD,
                                                          unit="USD per GPU-hour"))
        fix("memory_limit", _memory_limit(self.memory_limit))
        gpu_bytes: float
        try:
            gpu_bytes = gpu_memory(self.gpu).bytes or 0
        except OverflowError:  # a size of hundreds of digits
            gpu_bytes = math.inf
        if gpu_bytes > _MAX_MEMORY:
            raise UserError(f"--gpu {self.gpu!r}: a size past 1 PiB; give the GPU's own, e.g. 'A100 40GB'")
        if self.kv_bytes_per_token is not None:
            fix("kv_bytes_per_token", _number("--kv-bytes-per-token", self.kv_bytes_per_token, low=0,
                                              high=_MAX_KV_BYTES, low_open=True, unit="bytes of KV cache per token"))
            if self.model is not None:
                raise UserError("give --model or --kv-bytes-per-token, not both: each sets the KV bytes per token")
        fix("session_keys", tuple(self.session_keys))
        self.window  # noqa: B018 - checked now, not when the audit is half done
        if self.ray is not None:
            from . import distributed  # only with --ray: it brings Ray (the optional [ray] extra)

            distributed.check_address(self.ray)
            if self.ray_workers is not None and not 1 <= self.ray_workers <= _MAX_WORKERS:
                raise UserError(f"--ray-workers {self.ray_workers}: must be >= 1 and <= {_MAX_WORKERS:,}")

    @property
    def window(self) -> tuple[_dt.datetime | None, _dt.datetime | None]:
        """--since and --until as naive UTC; calls in [since, until) are audited."""
        window = _utc("--since", self.since), _utc("--until", self.until)
        if window[0] and window[1] and window[0] >= window[1]:
            raise UserError(f"--since {self.since} is not before --until {self.until}")
        return window

    @property
    def unpriced(self) -> bool:
        """No --model and no --kv-bytes-per-token: the audit stores no KV byte figures."""
        return self.model is None and self.kv_bytes_per_token is None


@dataclass
class AuditResult:
    """What `audit` stored: its id, the audits row (`summary`), the files read (formats.Source), the first
    rejects, the calls that named no session, and for a Ray audit what Ray did (`ray_run`: distributed.RayRun)."""
    audit_id: str
    db: Path
    summary: dict
    sources: list
    rejects: list[dict] = field(default_factory=list)
    unnamed_calls: int = 0
    ray_run: Any = None


def audit(paths: list, request: AuditRequest, *, db: Path, on_event: OnEvent | None = None,
          progress: bool = False) -> AuditResult:
    """The audit of `paths` (files, folders, quoted globs, s3:// URLs) stored in the DuckDB file `db`, which
    is created if absent (and then only once the audit is stored: a failed audit leaves no file). `on_event`
    hears the notes a user would read; with `progress` also how far reading is (Kind.FILE, PERCENT, PHASE),
    which costs a polling thread."""
    from . import guardrails
    from .dollars import prefetch
    from .prices_file import load_prices_file
    from .engine import AuditOptions, CallsNotStored, next_audit_id, run_audit
    from .formats import Keys, detect, json_keys
    from .kv_pricing import given, kv_pricing
    from .tokenizer import load_tokenizer

    tell = on_event or ignore
    model = request.model
    if request.unpriced:
        tell(Event(Kind.NOTE, UNPRICED_NOTICE))  # said once, before the audit: no model is guessed
    if not paths:
        raise UserError("give at least one log file")
    db = Path(db)
    paths = _log_files(paths, db)  # folders, quoted globs, s3:// prefixes and globs
    ray = request.ray
    if ray is not None:
        from .distributed import import_ray

        import_ray()  # before the DB is opened: no Ray, nothing written
    tok = load_tokenizer(request.tokenizer) if request.tokenizer else None
    book = load_prices_file(request.prices) if request.prices else None  # a bad price file fails before any read
    limit = guardrails.kv_limit(request.kv_max_mb, gpu_memory(request.gpu))
    opts = AuditOptions(fmt=request.fmt, idle_timeout_s=request.idle_timeout, spor_max=request.spor_max,
                        kv_max_mb=limit.mb, kv_max_basis=limit.basis, memory_limit=request.memory_limit,
                        price_book=book,
                        gpu_hour_price=request.gpu_hour_price)

    # The scratch folder (spilled blocks, normalised copies, the copies of s3:// objects) outlives the DB
    # connection: see workdir. Its name carries our PID, so the next audit removes it if this one is killed.
    # On a Ray cluster it lies in --ray-scratch, where every node reads it.
    if ray and request.ray_scratch:
        Path(request.ray_scratch).mkdir(parents=True, exist_ok=True)
    work = scratch_dir("audit", parent=request.ray_scratch if ray else None)
    ray_run = None
    try:
        paths, origins = _staged(paths, str(work))
        # Check every file (exists, readable, a format we know) before the DB is even opened.
        probe = connect()
        try:
            opts.keys = Keys(json_keys(probe, "--session-key", list(request.session_keys)),
                             json_keys(probe, "--time-key", [] if request.time_key is None else [request.time_key]))
            for p in paths:
                detect(probe, Path(p), request.fmt)
        finally:
            probe.close()
        prefetch()
        opts.workdir = str(work)
        opts.since, opts.until = request.window
        # A new DB file is written under a temporary name beside it and linked into place only when the audit
        # is stored: a failed or killed audit leaves no DB file, and two audits creating the same file never
        # remove each other's (the one that finishes second says so and stores nothing).
        with db_file(db) as path:
            with Store(path) as store, \
                    _file_progress(progress and not ray, store.con, tell) as opts.on_file:
                con = store.con
                pricing = (given(request.kv_bytes_per_token) if request.kv_bytes_per_token is not None
                           else kv_pricing(model, con))
                audit_id = next_audit_id(con)
                args: dict[str, Any] = dict(audit_id=audit_id, run_id=None, model=model, pricing=pricing,
                                            memory=gpu_memory(request.gpu), tokenizer=tok, strict=request.strict,
                                            origins=origins)
                # No engine.cleanup here: closing the Store's connection, right after, drops the whole
                # scratch catalog and rolls back an unfinished transaction (dropping it first cost 0.07 s).
                if ray is None:
                    try:
                        result = run_audit(con, paths, opts, **args)
                    except CallsNotStored as exc:
                        raise _not_stored(db, exc.cause) from None
                    _store(con, result, db)
                else:
                    result, ray_run = _ray_audit(con, paths, opts, args, request, tell if progress else None, db)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return AuditResult(audit_id=audit_id, db=db, summary=result.summary, sources=result.sources,
                       rejects=result.rejects, unnamed_calls=result.unnamed_calls, ray_run=ray_run)


def _store(con, result, db: Path) -> None:
    """engine.persist, with a failure (a full disk, a read-only folder) named for the DB file."""
    from .engine import persist

    try:
        persist(con, result)
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None
    except (duckdb.Error, OSError) as exc:
        raise _not_stored(db, exc) from None


def _not_stored(db: Path, exc: Exception) -> UserError:
    """A failure to write the audit (a full disk, a read-only folder) as one line naming the DB file (db_file
    puts the user's name in place of a new file's temporary one)."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return UserError(f"{shown(db)}: cannot store the audit ({first}); nothing was stored")


@contextlib.contextmanager
def _file_progress(enabled: bool, con, tell: OnEvent):
    """Files begun and read, and how far DuckDB is through the statement now running (a long file is one
    statement), as events when enabled. Yields the engine's per-file callback, or None."""
    if not enabled:
        yield None
        return
    from .sqlfiles import run_sql

    stop = threading.Event()

    def on_file(i: int, n: int, src, lines: int | None, seconds: float | None) -> None:
        tell(Event(Kind.FILE, name=src.path.name, done=i, total=n, count=lines, seconds=seconds))

    def poll() -> None:
        while not stop.wait(0.5):
            tell(Event(Kind.PERCENT, percent=con.query_progress()))

    run_sql(con, "setup/progress")
    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        yield on_file
    finally:
        stop.set()
        poller.join()


def _log_files(args: list, db: Path) -> list:
    """The logs in order, each once: local files (logfiles.expand_paths) and s3:// URLs (listed, not read:
    remote.expand)."""
    from . import remote
    from .logfiles import expand_paths

    out: dict = {}  # a local file's resolved path (or a URL) -> the file as named: each file once
    for arg in args:
        url = remote.url_of(arg)
        found = remote.expand(url) if url else expand_paths([arg], exclude=(Path(db), Path(str(db) + ".wal")))
        for f in found:
            out.setdefault(f if url else os.path.realpath(f), f)
    return list(out.values())


def _staged(paths: list, folder: str) -> tuple[list[Path], dict[Path, str]]:
    """`paths` with each s3:// URL replaced by a local copy in `folder`; and the URL of each copy."""
    from . import remote

    urls = [p for p in paths if remote.url_of(p)]
    if not urls:
        return [Path(p) for p in paths], {}
    copies = remote.stage(urls, folder)
    local = {url: path for path, url in copies.items()}
    return [local[p] if p in local else Path(p) for p in paths], copies


def _ray_audit(con, paths, opts, args: dict, request: AuditRequest, tell: OnEvent | None, db: Path):
    """The audit as Ray tasks (runner/audit/distributed.py), stored in one transaction like the other; the
    result and what Ray did (distributed.RayRun). `tell`, if given, hears each phase's progress."""
    from .distributed import Cluster  # only with --ray: the optional [ray] extra

    def on_progress(p) -> None:
        if tell:
            tell(Event(Kind.PHASE, name=p.phase, done=p.done, total=p.total, count=p.calls, seconds=p.seconds))

    with Cluster(request.ray, request.ray_workers, request.ray_scratch, request.ray_partitions,
                 on_progress=on_progress if tell else None) as cluster:
        result = cluster.run_audit(con, paths, opts, tokenizer_path=request.tokenizer, **args)
        started = time.perf_counter()
        _store(con, result, db)  # the calls and rejects come straight from the scratch Parquet, so before it goes
        cluster.run_info.phase_seconds["persist"] = time.perf_counter() - started
    return result, cluster.run_info
