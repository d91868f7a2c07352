"""`kvreport run`: load a model, run the selected experiments, store everything in the DuckDB file. Parses the
options into a RunRequest, calls the library (runner/measure/api.py) and prints the result (output.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..core.errors import UserError
from ..core.groups import GROUPS, parse_groups
from .output import Output, run_lines

# The measuring code (runner/measure: torch, transformers) is imported inside `run` below, never at the top: the
# CLI imports this module to register `run`, and every other command must start without torch
# (tests/test_layers.py). Its options are checked (RunRequest) before torch is imported.

_GROUPS_HELP = "Which groups of experiments to run, comma-separated: " + "; ".join(
    f"{name} ({what})" for name, what in GROUPS.items()) + "."


def run(
    model: Annotated[str, typer.Option(help="Built-in architecture name (see `kvreport models`) or a local "
                                            "Hugging Face checkpoint folder.")] = "gpt2",
    device: Annotated[str, typer.Option(help="auto, cpu, cuda or cuda:N.")] = "auto",
    dtype: Annotated[str, typer.Option(help="auto, float16, bfloat16 or float32.")] = "auto",
    groups: Annotated[str, typer.Option(help=_GROUPS_HELP)] = ",".join(GROUPS),
    iterations: Annotated[str | None, typer.Option(hidden=True, help="Deprecated: --groups (1: allocator, "
                                                                     "2: cache, 3: serving, audit: traffic).")
                          ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Small sweeps for smoke runs and tests.")] = False,
    db: Annotated[Path, typer.Option(help="DuckDB file to append this run to.")] = Path("kvreport.duckdb"),
    label: Annotated[str | None, typer.Option(help="Free-text label stored with the run.")] = None,
    only: Annotated[str | None, typer.Option(help="Comma-separated experiment names to run (default all).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the run's id, status and DB file.")
                     ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also print the rows each experiment stored, "
                                                                  "by table.")] = False,
):
    """Measure the KV cache of one model on one device and append the results to the DB. Exits 1 when any
    experiment failed (a skip is not a failure), after storing every other result."""
    from ..measure.api import RunRequest, run as measure  # torch-free until `measure` runs: see the note at the top

    if iterations is not None:
        if groups != ",".join(GROUPS):
            raise UserError("give --groups or --iterations, not both (--iterations is --groups' old name)")
        groups = ",".join(parse_groups(iterations, "--iterations"))
        typer.echo(f"--iterations is deprecated: this is --groups {groups}", err=True)
    request = RunRequest(model=model, device=device, dtype=dtype, groups=tuple(groups.split(",")), quick=quick,
                         label=label, only=tuple((only or "").split(",")))
    out = Output(quiet=quiet, verbose=verbose)
    result = measure(request, db=db, on_event=out)
    out.line("")
    out.result(run_lines(result))
    if result.failures:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
