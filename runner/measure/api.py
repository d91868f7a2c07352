"""A measured run as a library call: `run(RunRequest(...), db=..., on_event=...) -> RunResult`.

A RunRequest checks its groups and experiment names when it is made, importing nothing heavy (a bad one raises
UserError naming the option: exit 2 from the CLI). `run` loads the model, runs the selected experiments and
stores each result in the DuckDB file as it ends; one failed experiment never loses the others. It prints
nothing: what a user would be told goes to `on_event` (runner/core/events.py). torch is imported only when
`run` is called.
"""
from __future__ import annotations

import datetime as dt
import importlib.util
import pkgutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import UserError, describe_exception
from ..core.events import Event, Kind, OnEvent, ignore
from ..core.groups import GROUPS, parse_groups


def experiment_names() -> list[str]:
    """Every experiment's name, from the experiment package's files (an experiment's NAME is its module's
    name), without importing them: they import torch."""
    spec = importlib.util.find_spec(f"{__package__}.experiments")
    folders = list(spec.submodule_search_locations or []) if spec else []
    return sorted(m.name for m in pkgutil.iter_modules(folders))


@dataclass(frozen=True)
class RunRequest:
    """What to measure: a model (a built-in name, a config.json or a checkpoint folder), where and in what
    dtype (checked by `run`, which needs torch to know), the groups of experiments (core/groups.py; a tuple
    or the option's comma-separated text) and, within them, only some experiments (`only`, default all)."""
    model: str = "gpt2"
    device: str = "auto"
    dtype: str = "auto"
    groups: tuple[str, ...] = tuple(GROUPS)
    quick: bool = False
    label: str | None = None
    only: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        groups = self.groups if isinstance(self.groups, str) else ",".join(self.groups)
        object.__setattr__(self, "groups", parse_groups(groups))
        only = self.only.split(",") if isinstance(self.only, str) else self.only
        object.__setattr__(self, "only", tuple(s.strip() for s in only if s.strip()))
        known = experiment_names()
        unknown = [n for n in self.only if n not in known]
        if unknown:
            raise UserError(f"--only {','.join(unknown)}: no such experiment; expected some of {', '.join(known)}")


@dataclass
class RunResult:
    """What `run` stored: the run's id and status (complete or failed), how many experiments ran, their
    one-line findings, and (experiment, reason) for each that failed (a skip is not a failure)."""
    run_id: int
    db: Path
    status: str
    n_experiments: int
    summary: list[str] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)


def run(request: RunRequest, *, db: Path, on_event: OnEvent | None = None) -> RunResult:
    """The whole run, appended to the DuckDB file `db` (opened only once the model name checks out).
    SIGTERM is not handled here: the CLI turns it into an interrupt around the whole command, and a program
    calling this keeps its own handler."""
    import torch  # measuring code: see the module docstring

    from ..core.store import Store
    from .devices import dtype_name, resolve_device, resolve_dtype
    from .environment import collect
    from .experiments import RunContext, Skip, registry
    from .models import REPLICA_EXPERIMENTS, load_config, load_model, replica_skip_reason
    from .probes import device_state

    tell = on_event or ignore
    model, only = request.model, request.only
    dev = resolve_device(request.device)
    load_config(model)  # fail on a bad name before touching the DB
    dtype = resolve_dtype(request.dtype, dev, model)
    if dev.type == "cpu" and request.device == "auto":
        tell(Event(Kind.NOTE, "no CUDA GPU visible: measuring on the CPU (GPU-only experiments will be recorded as "
                              "skipped)"))
    store = Store(db)
    try:
        meta = collect(dev)
        tell(Event(Kind.NOTE, f"loading {model} on {meta['device_name']} ({dtype_name(dtype)})"))
        t0 = time.perf_counter()
        loaded = load_model(model, dev, dtype)
        weights = 'random (architecture from config)' if loaded.weights_random else f'real ({loaded.source})'
        tell(Event(Kind.NOTE, f"  loaded in {time.perf_counter() - t0:.1f}s; weights: {weights}"))
        # The runs table's `iterations` column holds the groups selected.
        meta.update(model=model, model_source=loaded.source, dtype=dtype_name(dtype),
                    weights_random=loaded.weights_random, quick=request.quick, iterations=",".join(request.groups),
                    label=request.label)
        run_id = store.begin_run(meta)
        ctx = RunContext(run_id=run_id, device=dev, dtype=dtype, loaded=loaded, quick=request.quick,
                         progress=lambda msg: tell(Event(Kind.STEP_LINE, msg)))
        experiments = [e for e in registry() if e.group in request.groups and (not only or e.name in only)]
        summary: list[str] = []
        failures: list[tuple[str, str]] = []
        status = "complete"
        try:
            for i, exp in enumerate(experiments, 1):
                tell(Event(Kind.STEP, name=exp.name, done=i, total=len(experiments)))
                started = time.perf_counter()
                started_at = _utcnow()
                before = device_state(dev)  # NVML clocks/power/temperature/throttle; None off CUDA
                outcome, reason, tables = "ok", "", {}
                try:
                    if loaded.is_replica and exp.name not in REPLICA_EXPERIMENTS:
                        raise Skip(replica_skip_reason(loaded))
                    with torch.inference_mode():
                        result = exp.run(ctx)
                    tables = {**result.tables, **_state_rows(exp.name, before, dev)}
                    store.record_experiment(run_id, exp.name, "ok", None, tables, started_at,
                                            time.perf_counter() - started)
                    summary.extend(result.summary)
                except Skip as skip:
                    outcome, reason = "skipped", str(skip)
                    store.record_experiment(run_id, exp.name, outcome, reason, _state_rows(exp.name, before, dev),
                                            started_at, time.perf_counter() - started)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except Exception as exc:  # noqa: BLE001 - one broken experiment must not lose the others
                    outcome, reason = "failed", describe_exception(exc)
                    store.record_experiment(run_id, exp.name, outcome, reason,
                                            _state_rows(exp.name, before, dev), started_at,
                                            time.perf_counter() - started)
                    status = "failed"
                    failures.append((exp.name, reason))
                finally:
                    if dev.type == "cuda":
                        torch.cuda.empty_cache()
                tell(Event(Kind.STEP_END, reason, name=exp.name, status=outcome,
                           seconds=time.perf_counter() - started))
                if outcome == "ok":
                    for table, rows in tables.items():
                        tell(Event(Kind.DETAIL, f"    stored {len(rows):,} row(s) in {table}"))
        except KeyboardInterrupt:
            store.finish_run(run_id, "interrupted")
            raise
        except BaseException:
            store.finish_run(run_id, "failed")
            raise
        store.finish_run(run_id, status)
        return RunResult(run_id=run_id, db=Path(db), status=status, n_experiments=len(experiments),
                         summary=summary, failures=failures)
    finally:
        store.close()


def _state_rows(experiment: str, before: Any, device) -> dict:
    """device_state rows read before and after an experiment: empty where NVML is absent."""
    from .probes import device_state  # measuring code: see the module docstring

    rows = [s.row(experiment, moment) for moment, s in (("before", before), ("after", device_state(device)))
            if s is not None]
    return {"device_state": rows} if rows else {}


def _utcnow():
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)
