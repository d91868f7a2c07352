"""`kvreport audit --ray`: the same audit, with the same SQL, as Ray tasks (ray_tasks.py) over shares of the
logs; this is the driver: it partitions the files, runs map, reduce and time, combines the partials with the
single-process audit's own SQL and stores the result in one transaction. The design, and why the rows equal
the single-process audit's (DOUBLE sums to FLOAT_DIGITS digits), is in docs/audit-on-ray.md. Ray is imported
only here, only when --ray is given (pip install 'kvreport[ray]')."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import duckdb

from ..core.errors import UserError
from . import dollars, engine, pipeline
from .formats import Source
from .sqlfiles import run_sql
from .ray_tasks import (SESSION_PARTS, SESSION_TABLES, TIME_PARTS, map_task, reduce_task, table_param,
                        time_task, time_window)

FLOAT_DIGITS = 12  # significant digits two audits' DOUBLE sums agree to (see the module's docstring)
_TASK_OVERHEAD_BYTES = 400 * 1024 * 1024  # Python, pyarrow and DuckDB's uncounted memory in each task
_RETRY_ON = (OSError, MemoryError)  # besides a dead worker: what may go away on a second try


class RayAuditError(UserError):
    """The Ray audit could not run (no Ray, no cluster, a task that failed twice): nothing was stored."""
    exit_code = 1


@dataclass
class Progress:
    """What `on_progress` is told: the phase, tasks done of all, calls handled so far, seconds since start."""
    phase: str
    done: int
    total: int
    calls: int
    seconds: float


@dataclass
class TaskTime:
    phase: str
    index: int
    seconds: float
    calls: int
    files: int


@dataclass
class RayRun:
    """What a Ray audit did, for the command's output and the benchmark."""
    workers: int
    partitions: int
    maps: int
    task_times: list[TaskTime] = field(default_factory=list)
    phase_seconds: dict[str, float] = field(default_factory=dict)  # map, reduce, time, combine (the driver's)
    ray_start_s: float = 0.0        # starting (or joining) Ray


def check_address(address: str | None) -> str | None:
    """--ray's value: "local" (None in the API) starts a local Ray; "auto", ray://HOST:PORT or HOST:PORT join a
    cluster. Anything else is most likely a log file the option took as its value."""
    if address is None or address.strip() == "local":
        return None
    a = address.strip()
    if a == "auto" or a.startswith("ray://"):
        return a
    host, _, port = a.rpartition(":")
    if host and port.isdigit() and "/" not in host:
        return a
    raise UserError(f"--ray {address}: not a Ray address: give local (a Ray on this machine), auto, "
                    "ray://HOST:10001 or HOST:6379")


CONNECT_TIMEOUT_S = 5.0  # a cluster that does not accept a connection in this long is not there


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) that --ray's address names, or None ("auto": Ray finds it)."""
    if address == "auto":
        return None
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """RayAuditError naming the address when nothing accepts a TCP connection there within `timeout`: Ray's
    own connect retries for minutes before it says so."""
    target = _host_port(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=timeout).close()
    except OSError as exc:
        why = (f"nothing answered within {timeout:g} s" if isinstance(exc, TimeoutError)
               else (exc.strerror or str(exc) or type(exc).__name__))
        raise RayAuditError(f"--ray {address}: no Ray cluster there ({why})") from None


def import_ray():
    try:
        import ray  # the optional [ray] extra: only `kvreport audit --ray` needs it
    except ImportError:
        raise RayAuditError("--ray needs Ray: pip install 'kvreport[ray]'") from None
    return ray


# --- the driver ------------------------------------------------------------------------------------------------

def _shares(sources: list[Source], n: int) -> list[list[Source]]:
    """Contiguous runs of the file list, about equal in bytes, at most n. Contiguous: each run's rows keep the
    files' order, which the reduce restores with (map_idx, map_rid)."""
    sizes = [max(1, _size(s.path)) for s in sources]
    total, acc = sum(sizes), 0
    out: list[list[Source]] = []
    cur: list[Source] = []
    for src, size in zip(sources, sizes):
        if cur and acc + size / 2 > total * (len(out) + 1) / n:
            out.append(cur)
            cur = []
        cur.append(src)
        acc += size
    out.append(cur)
    return out


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _files(paths) -> str:
    names = [str(p) for p in paths]
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


class Cluster:
    """Ray for one audit, and its scratch folder. Use as a context manager: on exit the scratch folder is removed
    and a Ray this audit started is shut down."""

    def __init__(self, address: str | None = None, workers: int | None = None, scratch: str | Path | None = None,
                 partitions: int | None = None, on_progress: Callable[[Progress], None] | None = None):
        self.address = check_address(address)
        self.workers = workers
        self.scratch_root = scratch
        self.partitions = partitions
        self.on_progress = on_progress
        self._run_info: RayRun | None = None
        self._started_ray = False
        self._ray_start_s = 0.0
        self._scratch_dir: Path | None = None

    @property
    def run_info(self) -> RayRun:
        """What Ray did in this cluster's audit (run_audit sets it first)."""
        assert self._run_info is not None, "run_audit has not started"
        return self._run_info

    @property
    def _scratch(self) -> Path:
        assert self._scratch_dir is not None, "use Cluster as a context manager"
        return self._scratch_dir

    def __enter__(self) -> Cluster:
        ray = import_ray()
        started = time.perf_counter()
        if not ray.is_initialized():
            if self.address is not None:
                check_reachable(self.address)
            # Nothing reaches out: no dashboard, no usage report (which also asks the cloud's metadata address).
            os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
            kwargs = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
            try:
                if self.address is None:
                    ray.init(num_cpus=self.workers or os.cpu_count() or 1, **kwargs)
                else:
                    ray.init(address=self.address, **kwargs)
            except Exception as exc:  # noqa: BLE001 - Ray's own message says what is wrong with the address
                where = "start a local Ray" if self.address is None else f"connect to the Ray cluster at {self.address}"
                raise RayAuditError(f"--ray: cannot {where} ({str(exc).splitlines()[0]})") from None
            self._started_ray = True
        self._ray_start_s = time.perf_counter() - started
        root = Path(self.scratch_root) if self.scratch_root else None
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        self._scratch_dir = Path(tempfile.mkdtemp(prefix="kvreport-ray-", dir=root)).resolve()
        return self

    def __exit__(self, *exc) -> None:
        if self._scratch_dir is not None:
            shutil.rmtree(self._scratch_dir, ignore_errors=True)
        if self._started_ray:
            import ray

            ray.shutdown()

    @property
    def cpus(self) -> int:
        import ray

        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    # One attempt more for a dead worker; an exception is retried only when it may be passing (I/O, memory).
    def _remote(self, fn, opts: engine.AuditOptions):
        import ray

        memory = _TASK_OVERHEAD_BYTES + _bytes(opts.memory_limit)
        return ray.remote(fn).options(num_cpus=1, memory=memory, max_retries=1, retry_exceptions=list(_RETRY_ON))

    def _gather(self, phase: str, refs: dict, what: Callable[[int], str], calls_of=lambda r: 0,
                size_of=lambda key: 1) -> dict:
        """Wait for every task of a phase, telling on_progress (done counts size_of each finished task: files,
        partitions); a failed task stops the phase (the others are cancelled) with its own message when it is
        the user's (a bad file), else naming what it held."""
        import ray

        started, done, calls, out = time.perf_counter(), 0, 0, {}
        total = sum(size_of(key) for key in refs)
        pending = {ref: key for key, ref in refs.items()}
        self._tell(phase, done, total, calls, started)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            key = pending.pop(ready[0])
            try:
                out[key] = ray.get(ready[0])
            except BaseException as exc:  # noqa: BLE001 - any failure stops the audit, with one clear line
                for ref in pending:
                    ray.cancel(ref, force=True)
                raise _failure(exc, what(key)) from None
            done += size_of(key)
            calls += calls_of(out[key])
            self._tell(phase, done, total, calls, started)
        return out

    def _tell(self, phase: str, done: int, total: int, calls: int, started: float) -> None:
        if self.on_progress:
            self.on_progress(Progress(phase, done, total, calls, time.perf_counter() - started))

    def run_audit(self, con, paths: list, opts: engine.AuditOptions, *, audit_id: str, run_id: int | None,
                  model: str, pricing, memory, tokenizer=None, tokenizer_path: str | None = None,
                  strict: bool = False, origins: dict[Path, str] | None = None) -> engine.AuditResult:
        """The audit of `paths`, computed by Ray tasks, its figures written into `con`'s tables in the open
        transaction and its calls and rejects in views over this Cluster's scratch Parquet, for engine.persist,
        as engine.run_audit leaves them."""
        started = time.perf_counter()
        engine.setup(con, str(self._scratch), opts)
        sources = engine.detect_all(con, paths, opts.fmt, origins)
        cpus = self.cpus
        run = _Run(sources, _shares(sources, min(len(sources), 4 * cpus)), self.partitions or 2 * cpus,
                   replace(opts, threads=1, workdir=None, on_file=None), os.getcwd())
        self._run_info = RayRun(cpus, run.partitions, len(run.shares), ray_start_s=self._ray_start_s)
        maps = self._map(run, opts)
        counts = {k: sum(r["stats"][k] for r in maps.values()) for k in ("n_calls", "n_rejects", "content_calls")}
        map_folders = [self._scratch / f"map-{i}" for i in sorted(maps)]
        self._load(con, "_staged_stats", map_folders)
        run_sql(con, "distributed/rejects_view", paths=dict(files=_parquet(map_folders, "_rejects")),
                scratch=self._scratch)
        rejects = engine.first_rejects(con)
        engine.check_records(paths, counts["n_calls"], counts["n_rejects"], rejects, strict)
        keys = dollars.merge_keys([r["keys"] for r in maps.values()])
        ends = [r["t_log_end"] for r in maps.values() if r["t_log_end"] is not None]
        fig = engine.Figures(dict(audit_id=audit_id, run_id=run_id), pricing.curve(),
                             counts["content_calls"], tokenizer, price_rows=dollars.price_table(keys, opts.price_book),
                             n_price_keys=len(keys), t_log_end=max(ends) if ends else None)
        folders = self._reduce(run, maps, opts, replace(fig, tokenizer=None), tokenizer_path)
        for name in SESSION_PARTS:
            self._load(con, name, folders)
        run_sql(con, "metrics/seg_window")
        self._time(run, folders, opts, time_window(con))

        phase_started = time.perf_counter()  # combine, with the single-process audit's SQL
        engine.begin_results(con)
        for name in TIME_PARTS:
            self._load(con, name, [f / "time" for f in folders])
        for name in SESSION_TABLES:
            run_sql(con, "distributed/insert_table", table_param(name), files=_parquet(folders, name))
        with_repeats = [f for f in folders if (f / "_repeat_parts.parquet").exists()]
        if with_repeats:
            self._load(con, "_repeat_parts", with_repeats)
        pipeline.run(con, pipeline.PRICE_ROWS, engine.figure_params(opts, fig))
        run_sql(con, "distributed/calls_priced_view", paths=dict(files=_parquet(folders, "_calls_priced")),
                scratch=self._scratch)
        run_sql(con, "store/calls_labelled", engine.store_columns(con))
        summary = engine.audit_figures(con, opts, fig, sources=sources, model=model, pricing=pricing, memory=memory,
                                       started=started)
        self.run_info.phase_seconds["combine"] = time.perf_counter() - phase_started
        return engine.AuditResult(audit_id, summary, sources, rejects, label_lookup=engine.label_lookup(con),
                                  unnamed_calls=engine.unnamed_calls(con))

    @staticmethod
    def _load(con, name: str, folders: list[Path]) -> None:
        """Scratch table `name`, the union of every task's NAME.parquet in `folders`."""
        run_sql(con, "distributed/load_table", table_param(name), files=_parquet(folders, name))

    def _map(self, run: _Run, opts: engine.AuditOptions) -> dict[int, dict]:
        started = time.perf_counter()
        task = self._remote(map_task, opts)
        refs = {i: task.remote(i, share, str(self._scratch / f"map-{i}"), run.opts, run.partitions, run.cwd)
                for i, share in enumerate(run.shares)}
        maps = self._gather("files mapped", refs,
                            lambda i: f"map task {i} (files {_files(s.path for s in run.shares[i])})",
                            calls_of=lambda r: r["stats"]["n_calls"], size_of=lambda i: len(run.shares[i]))
        self.run_info.phase_seconds["map"] = time.perf_counter() - started
        self.run_info.task_times += [TaskTime("map", i, r["seconds"], r["stats"]["n_calls"], len(run.shares[i]))
                                     for i, r in sorted(maps.items())]
        versions = {r["duckdb"] for r in maps.values()}
        if versions != {duckdb.__version__}:
            raise RayAuditError(f"--ray: the workers run DuckDB {', '.join(sorted(versions))}, this process "
                                f"{duckdb.__version__}: install the same version everywhere (the SQL and the "
                                "session hashing depend on it)")
        for i in sorted(maps):  # which Parquet files, and which logs' calls, each partition holds
            for p, srcs in maps[i]["parts"].items():
                folder = self._scratch / f"map-{i}" / "calls" / f"part={p}"
                run.files.setdefault(p, []).extend(str(f) for f in sorted(folder.glob("*.parquet")))
                run.held.setdefault(p, {}).update(dict.fromkeys(srcs))
        return maps

    def _reduce(self, run: _Run, maps: dict, opts: engine.AuditOptions, fig: engine.Figures,
                tokenizer_path: str | None) -> list[Path]:
        """The per-session figures of each partition (the workers load the tokenizer from tokenizer_path)."""
        started = time.perf_counter()
        task = self._remote(reduce_task, opts)
        refs = {p: task.remote(p, run.files[p], str(self._scratch / f"reduce-{p}"), run.opts, fig, tokenizer_path,
                               run.cwd)
                for p in sorted(run.files)}
        run.reduces = self._gather("partitions reduced", refs, run.partition, calls_of=lambda r: r["calls"])
        self.run_info.phase_seconds["reduce"] = time.perf_counter() - started
        self.run_info.task_times += [TaskTime("reduce", p, r["seconds"], r["calls"], len(run.held[p]))
                                     for p, r in sorted(run.reduces.items())]
        return [self._scratch / f"reduce-{p}" for p in sorted(run.reduces)]

    def _time(self, run: _Run, folders: list[Path], opts: engine.AuditOptions, window: dict) -> None:
        """Each partition's sums for the timeline and the TTL sweep, on the audit's time span."""
        started = time.perf_counter()
        task = self._remote(time_task, opts)
        refs = {p: task.remote(p, str(f), run.opts, window) for p, f in zip(sorted(run.reduces), folders)}
        times = self._gather("partitions sampled over time", refs, run.partition)
        self.run_info.phase_seconds["time"] = time.perf_counter() - started
        self.run_info.task_times += [TaskTime("time", p, r["seconds"], run.reduces[p]["calls"], len(run.held[p]))
                                     for p, r in sorted(times.items())]


@dataclass
class _Run:
    """One Ray audit's plan and what its phases found."""
    sources: list[Source]
    shares: list[list[Source]]       # the map tasks' files
    partitions: int
    opts: engine.AuditOptions        # the tasks' (one thread, no callbacks)
    cwd: str
    files: dict[int, list[str]] = field(default_factory=dict)      # partition -> its calls' Parquet files
    held: dict[int, dict[str, None]] = field(default_factory=dict)  # partition -> the logs its calls came from
    reduces: dict[int, dict] = field(default_factory=dict)

    def partition(self, p: int) -> str:
        return f"partition {p} (calls from {_files(self.held[p])})"


def _parquet(folders: list[Path], name: str) -> list[str]:
    """NAME.parquet in each of these folders (what _copy wrote there)."""
    return [str(f / f"{name}.parquet") for f in folders]


def _failure(exc: BaseException, what: str) -> BaseException:
    """The one error a failed task stops the audit with: the user's own (a file that cannot be read) as it
    is; else what failed, how often, and why."""
    cause = getattr(exc, "cause", None)  # a RayTaskError's: the exception the task raised
    for e in (cause, exc):
        if isinstance(e, UserError):
            return e
    if cause is None:  # the worker died (each attempt): Ray says how
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return RayAuditError(f"--ray: {what} failed twice (its worker died), nothing stored: {first}")
    text = (str(cause).strip().splitlines() or [""])[0]
    times = "failed twice" if isinstance(cause, _RETRY_ON) else "failed"
    return RayAuditError(f"--ray: {what} {times}, nothing stored: {type(cause).__name__}: {text}")


def _bytes(limit: str | None) -> int:
    """DuckDB's memory_limit ("350MB", "2GB", "1.5GiB") in bytes; 1 GB when none is set."""
    if not limit:
        return 1 << 30
    text = limit.strip().upper().replace(" ", "")
    units = {"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40, "KB": 10 ** 3, "MB": 10 ** 6,
             "GB": 10 ** 9, "TB": 10 ** 12, "B": 1}
    for unit, factor in units.items():
        if text.endswith(unit):
            with contextlib.suppress(ValueError):
                return int(float(text[: -len(unit)]) * factor)
    return 1 << 30
