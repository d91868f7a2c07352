"""`kvreport audit --explain`: the steps an audit of these files with these options would run, and why, in
plain lines; nothing is read beyond each file's format and nothing is stored.

A condition the options decide (OPTION_CONDITIONS) is answered here; one the data decides (whether calls
logged their messages, say) is shown as the question the audit asks while it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, cast

from . import pipeline
from .steps import PerSlice, Py, Statement, Step, StepParams, describe

# The conditions the options (and DuckDB's version) decide: evaluated on parameters made from the request.
OPTION_CONDITIONS = {
    pipeline.memory_limit_given,
    pipeline.threads_given,
    pipeline.has_try,
    pipeline.user_keys,
    pipeline.window,
    pipeline.tokenizer,
    pipeline.priced,
}


def _what(step: Step, params: StepParams | None) -> str:
    if isinstance(step, Py):
        return f"python  {step.fn.__module__.rsplit('.', 1)[-1]}.{step.fn.__name__}"
    if isinstance(step, Statement):
        return f"sql     {step.text}"
    if isinstance(step, PerSlice):
        return f"sql     {step.name}.sql, per slice ({describe(step.starts)})"
    name = step.file(params) if params is not None and "{" in step.name else step.name
    return f"sql     {name}.sql"


def _why(step: Step, params: StepParams | None) -> tuple[str, str]:
    """('+' runs, '-' skipped, '?' the data decides; why in words)."""
    cond = step.when
    if cond is None:
        return "+", "always"
    base = getattr(cond, "negates", cond)
    word = "when" if base is cond else "unless"
    if params is None or base not in OPTION_CONDITIONS:
        return "?", f"{word} {describe(base)} (found while running)"
    yes = bool(base(params))
    return ("+" if yes == (base is cond) else "-"), f"{word} {describe(base)}: {'yes' if yes else 'no'}"


def stage_lines(name: str, steps: Iterable[Step], params: StepParams | None = None) -> list[str]:
    """One line per step of a stage: what it runs and whether (and why) it would."""
    out = [f"{name}:"]
    for step in steps:
        mark, why = _why(step, params)
        out.append(f"  {mark} {_what(step, params):<64} {why}")
    return out


def plan_lines(paths: list, request: Any) -> list[str]:
    """Every stage an audit of `paths` (files, folders, quoted globs) with `request` (api.AuditRequest) would
    run, in order; each local file's format is detected to name its reader."""
    from ..core.connections import connect
    from .formats import SHAPES, detect, reader
    from .logfiles import expand_paths

    since, until = request.window
    keys = bool(request.session_keys or request.time_key)
    local = [p for p in paths if not str(p).startswith("s3://")]
    files = expand_paths(local) if local else []
    lines = [
        "The steps an audit with these options would run: '+' runs, '-' is skipped, '?' decided by the data.",
        *(f"{p}: read once copied here (its reader is chosen then)" for p in paths if p not in local),
    ]
    con = connect()
    try:
        setup = pipeline.SetupParams(tmpdir="", memory_limit=request.memory_limit, has_try=_has_try(con))
        lines += stage_lines("setup", pipeline.SETUP, setup)
        for path in files:
            src = detect(con, Path(path), request.fmt)
            params = pipeline.IngestParams(
                path=str(path),
                source=src.label,
                source_name=Path(path).name,
                delim="",
                max_line_size=0,
                compression="",
                fmt=src.fmt,
                keys=keys,
                src=src,
                shape=SHAPES[src.fmt].sql if src.fmt in SHAPES else None,
            )
            how = reader(src)
            lines += stage_lines(
                f"read {src.label} ({src.fmt}: reader {how})", (*pipeline.INGEST[how], *pipeline.INGEST_END), params
            )
    finally:
        con.close()
    lines += stage_lines(
        "after reading",
        pipeline.READ_END,
        pipeline.ReadEndParams(window=bool(since or until), since=since, until=until),
    )
    figures = pipeline.FigureParams(
        tokenizer=cast(Any, request.tokenizer),  # its name: --explain loads nothing
        priced=request.model is not None or request.kv_bytes_per_token is not None,
    )
    lines += stage_lines("calls priced and labelled", pipeline.CALLS_LABELLED, figures)
    lines += stage_lines("store (the calls, their labels, the rejects)", pipeline.STORE)
    lines += stage_lines("calls read back from the DB", pipeline.CALLS_STORED)
    lines += stage_lines("per-session figures", pipeline.SESSION_SUMS, figures)
    lines += stage_lines("time sums", pipeline.TIME_PARTS)
    lines += stage_lines("audit-wide figures", pipeline.AUDIT_FIGURES, figures)
    return lines


def _has_try(con) -> bool:
    try:
        pipeline.TRY_PROBE.run(con)
        return True
    except Exception:  # noqa: BLE001 - DuckDB before 1.3
        return False
