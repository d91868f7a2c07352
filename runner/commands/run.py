"""`kvreport run`: load a model, run the selected experiments, store everything in the DuckDB file."""
from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Annotated

import typer

from ..core.errors import UserError, describe_exception
from ..core.iterations import ITERATIONS
from ..core.store import Store

# The measuring code (runner/measure: torch, transformers) is imported inside the functions below, never at the
# top: the CLI imports this module to register `run`, and every other command must start without torch
# (tests/test_layers.py). This command is the only one that reaches it.


def parse_iterations(spec: str) -> list[str]:
    items = [s.strip() for s in spec.split(",") if s.strip()]
    bad = [s for s in items if s not in ITERATIONS]
    if bad or not items:
        raise UserError(f"--iterations {spec!r}: expected a comma-separated list of {', '.join(ITERATIONS)}")
    return items


def execute(model: str, device: str, dtype: str, iterations: list[str], quick: bool, db: Path,
            echo=typer.echo, label: str | None = None, only: list[str] | None = None,
            failed: list[tuple[str, str]] | None = None) -> int:
    """The whole run; returns the run_id. Separate from the typer function so tests can call it.
    `failed`, when given, receives (experiment, reason) for every experiment that failed (not skipped).
    SIGTERM is not handled here: main() turns it into an interrupt around the whole command, and a test or
    program calling this directly keeps its own handler."""
    import torch  # measuring code: see the note at the top

    from ..measure.devices import dtype_name, resolve_device, resolve_dtype
    from ..measure.environment import collect
    from ..measure.experiments import RunContext, Skip, registry
    from ..measure.models import REPLICA_EXPERIMENTS, load_config, load_model, replica_skip_reason
    from ..measure.probes import device_state

    known = [e.name for e in registry()]
    unknown = [n for n in (only or []) if n not in known]
    if unknown:
        raise UserError(f"--only {','.join(unknown)}: no such experiment; expected some of {', '.join(known)}")
    dev = resolve_device(device)
    load_config(model)  # fail on a bad name before touching the DB
    dt = resolve_dtype(dtype, dev, model)
    if dev.type == "cpu" and device == "auto":
        echo("no CUDA GPU visible: measuring on the CPU (GPU-only experiments will be recorded as skipped)")
    store = Store(db)
    try:
        meta = collect(dev)
        echo(f"loading {model} on {meta['device_name']} ({dtype_name(dt)})")
        t0 = time.perf_counter()
        loaded = load_model(model, dev, dt)
        echo(f"  loaded in {time.perf_counter() - t0:.1f}s; weights: "
             f"{'random (architecture from config)' if loaded.weights_random else 'real (' + loaded.source + ')'}")
        meta.update(model=model, model_source=loaded.source, dtype=dtype_name(dt),
                    weights_random=loaded.weights_random, quick=quick, iterations=",".join(iterations),
                    label=label)
        run_id = store.begin_run(meta)
        ctx = RunContext(run_id=run_id, device=dev, dtype=dt, loaded=loaded, quick=quick,
                         progress=lambda msg: echo(f"    {msg}"))
        experiments = [e for e in registry() if e.iteration in iterations and (not only or e.name in only)]
        summary: list[str] = []
        failures = failed if failed is not None else []
        status = "complete"
        try:
            for i, exp in enumerate(experiments, 1):
                echo(f"[{i}/{len(experiments)}] {exp.name} (iteration {exp.iteration})")
                started = time.perf_counter()
                started_at = _utcnow()
                before = device_state(dev)  # NVML clocks/power/temperature/throttle; None off CUDA
                try:
                    if loaded.is_replica and exp.name not in REPLICA_EXPERIMENTS:
                        raise Skip(replica_skip_reason(loaded))
                    with torch.inference_mode():
                        result = exp.run(ctx)
                    store.record_experiment(run_id, exp.name, "ok", None,
                                            {**result.tables, **_state_rows(exp.name, before, dev)}, started_at,
                                            time.perf_counter() - started)
                    summary.extend(result.summary)
                    echo(f"  ok in {time.perf_counter() - started:.1f}s")
                except Skip as skip:
                    store.record_experiment(run_id, exp.name, "skipped", str(skip), _state_rows(exp.name, before, dev),
                                            started_at, time.perf_counter() - started)
                    echo(f"  skipped: {skip}")
                except (KeyboardInterrupt, SystemExit):
                    raise
                except Exception as exc:  # noqa: BLE001 - one broken experiment must not lose the others
                    reason = describe_exception(exc)
                    store.record_experiment(run_id, exp.name, "failed", reason, _state_rows(exp.name, before, dev),
                                            started_at, time.perf_counter() - started)
                    echo(f"  FAILED: {reason}")
                    status = "failed"
                    failures.append((exp.name, reason))
                finally:
                    if dev.type == "cuda":
                        torch.cuda.empty_cache()
        except KeyboardInterrupt:
            store.finish_run(run_id, "interrupted")
            raise
        except BaseException:
            store.finish_run(run_id, "failed")
            raise
        store.finish_run(run_id, status)
        echo("")
        echo(f"run {run_id} {status}: {len(experiments)} experiments -> {db}")
        for line in summary:
            echo(f"  - {line}")
        if failures:
            echo(f"FAILED: {len(failures)} of {len(experiments)} experiments (their results are missing; the "
                 "others are stored):")
            for name, reason in failures:
                echo(f"  - {name}: {reason}")
        return run_id
    finally:
        store.close()


def _state_rows(experiment: str, before, device) -> dict:
    """device_state rows read before and after an experiment (issue 11): empty where NVML is absent."""
    from ..measure.probes import device_state  # measuring code: see the note at the top

    rows = [s.row(experiment, moment) for moment, s in (("before", before), ("after", device_state(device)))
            if s is not None]
    return {"device_state": rows} if rows else {}


def _utcnow():
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)


def run(
    model: Annotated[str, typer.Option(help="Built-in architecture name (see `kvreport models`) or a local "
                                            "Hugging Face checkpoint folder.")] = "gpt2",
    device: Annotated[str, typer.Option(help="auto, cpu, cuda or cuda:N.")] = "auto",
    dtype: Annotated[str, typer.Option(help="auto, float16, bfloat16 or float32.")] = "auto",
    iterations: Annotated[str, typer.Option(help="Which iterations to run: 1,2,3,audit.")] = "1,2,3,audit",
    quick: Annotated[bool, typer.Option("--quick", help="Small sweeps for smoke runs and tests.")] = False,
    db: Annotated[Path, typer.Option(help="DuckDB file to append this run to.")] = Path("kvreport.duckdb"),
    label: Annotated[str | None, typer.Option(help="Free-text label stored with the run.")] = None,
    only: Annotated[str | None, typer.Option(help="Comma-separated experiment names to run (default all).")] = None,
):
    """Measure the KV cache of one model on one device and append the results to the DB. Exits 1 when any
    experiment failed (a skip is not a failure), after storing every other result."""
    failed: list[tuple[str, str]] = []
    execute(model, device, dtype, parse_iterations(iterations), quick, db, label=label,
            only=[s.strip() for s in only.split(",")] if only else None, failed=failed)
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
