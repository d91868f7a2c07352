"""Everything `kvreport audit` and `kvreport run` say, in one place: the library's events
(runner/core/events.py) as lines on stdout and as a progress bar on stderr (on a terminal, or when forced),
and the lines that report a finished audit or run. `--quiet` keeps only the result's first line and drops
the bar; `--verbose` adds detail (each file read, each experiment's tables)."""
from __future__ import annotations

import sys
from typing import Any, Callable

import typer

from ..core.events import Event, Kind


class Output:
    """The `on_event` of a command, and its printer. `bar`: None draws the progress bar when stderr is a
    terminal; `wants_progress` says whether the library should send progress events at all. Use it as a
    context manager so the bar is gone before the result is printed."""

    def __init__(self, echo: Callable[[str], Any] = typer.echo, quiet: bool = False, verbose: bool = False,
                 bar: bool | None = None):
        self.echo, self.quiet, self.verbose = echo, quiet, verbose and not quiet
        self.bar_on = not quiet and (sys.stderr.isatty() if bar is None else bar)
        self.force_terminal = bar
        self.wants_progress = self.bar_on or self.verbose
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        self._what, self._done = "reading", ""

    def __enter__(self) -> Output:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def line(self, text: str) -> None:
        if not self.quiet:
            self.echo(text)

    def result(self, lines: list[str]) -> None:
        """A finished command's report: all of it, or with --quiet its first line."""
        for text in lines[:1] if self.quiet else lines:
            self.echo(text)

    def __call__(self, e: Event) -> None:
        if e.kind is Kind.NOTE:
            self.line(e.text)
        elif e.kind is Kind.DETAIL:
            if self.verbose:
                self.line(e.text)
        elif e.kind is Kind.STEP:
            self.line(f"[{e.done}/{e.total}] {e.name}")
        elif e.kind is Kind.STEP_LINE:
            self.line(f"    {e.text}")
        elif e.kind is Kind.STEP_END:
            self.line(f"  ok in {e.seconds:.1f}s" if e.status == "ok" else
                      f"  skipped: {e.text}" if e.status == "skipped" else f"  FAILED: {e.text}")
        elif e.kind is Kind.FILE:
            self._file(e)
        elif e.kind is Kind.PERCENT:
            self._show(e.percent)
        elif e.kind is Kind.PHASE:
            self._phase(e)

    # The bar: files done, lines per second and how far DuckDB is through the current statement; for a Ray
    # audit, files mapped and partitions reduced with calls per second. Transient: gone once closed.
    def _started(self) -> Any:
        if self._bar is None and self.bar_on:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=Console(stderr=True, force_terminal=self.force_terminal),
                                 transient=True)
            self._bar.start()
        return self._bar

    def _file(self, e: Event) -> None:
        bar = self._started()
        if bar is not None and "reading" not in self._tasks:
            self._tasks["reading"] = bar.add_task("reading", total=e.total)
        if e.count is None:
            self._what = f"reading {e.name} ({e.done}/{e.total})"
        else:
            self._done = f"; read {e.name}: {e.count:,} lines, {e.count / max(e.seconds or 0, 1e-9):,.0f} lines/s"
            if self.verbose and bar is None:
                self.line(f"  {self._done[2:]}")
            self._what = "auditing" if e.done == e.total else self._what
            if bar is not None:
                bar.update(self._tasks["reading"], completed=e.done)
        self._show()

    def _show(self, pct: float = -1) -> None:
        if self._bar is not None and "reading" in self._tasks:
            self._bar.update(self._tasks["reading"],
                             description=self._what + (f" {pct:.0f}%" if pct >= 0 else "") + self._done)

    def _phase(self, e: Event) -> None:
        bar = self._started()
        if bar is None:
            return
        if e.name not in self._tasks:
            self._tasks[e.name] = bar.add_task(e.name, total=e.total)
        rate = f": {e.count:,} calls, {e.count / max(e.seconds or 0, 1e-9):,.0f} calls/s" if e.count else ""
        bar.update(self._tasks[e.name], completed=e.done, total=e.total, description=e.name + rate)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._bar, self._tasks = None, {}


# --- the report of a finished audit or run ---------------------------------------------------------------

def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _usd(v) -> str:
    return "n/a" if v is None else f"${v:,.4f}" if abs(v) < 100 else f"${v:,.2f}"


def audit_lines(result, request) -> list[str]:
    """What `kvreport audit` prints once the audit (an audit.api.AuditResult of `request`) is stored: where it
    went, the figures, the cost, the first rejects, what was skipped."""
    from ..audit import guardrails  # imports the model facts: only once there is an audit to print

    s = result.summary
    out = [f"{result.audit_id}: {s['n_calls']:,} calls in {s['n_sessions']:,} sessions from {len(result.sources)} "
           f"file(s) ({s['format']}) -> {result.db}",
           f"  KV pricing: {s['kv_bytes_detail']}"]
    if unnamed := result.unnamed_calls:  # PCER "per session" of such a call is the call's own
        out.append(f"  sessions: {unnamed:,} of {s['n_calls']:,} call(s) named no session, so each is its own "
                   "session and its per-session PCER is per call (give --session-key PATH)")
    out.append(f"  PCER (cached / total input, token-weighted): {_pct(s['overall_pcer'])}")
    out.append(f"  SPOR (system / total input): {_pct(s['overall_spor'])}"
               + (f" ({s['spor_reason']})" if s["spor_reason"] else ""))
    out.append(f"  KV leakage index (idle > {request.idle_timeout:g}s share of KV byte-seconds): "
               f"{_pct(s['leakage_index'])}" + (f" ({s['leakage_reason']})" if s["leakage_reason"] else ""))
    out += guardrails.lines(s)
    out += _cost_lines(s)
    if s["n_rejects"]:
        out.append(f"  rejected: {s['n_rejects']:,} record(s) (all in token_rejects), e.g.:")
        out += [f"    {r['source']}:{r['line']}: {r['reason']}" for r in result.rejects[:5]]
    else:
        out.append("  rejected: 0 records")
    if s.get("n_skipped_lines"):
        out.append(f"  skipped: {s['n_skipped_lines']:,} line(s): blank"
                   + (", or calls outside --since/--until" if request.since or request.until else "")
                   + (", or Langfuse observations that are not generations (spans, events, ...)"
                      if any(src.fmt == "langfuse" for src in result.sources) else ""))
    return out


def _cost_lines(s: dict) -> list[str]:
    out = [f"  cost: {_usd(s['cost_usd'])} for {s['priced_calls']:,} priced call(s)"
           + (f" (prices: {s['price_source']}, as of {s['price_snapshot_date']})" if s["price_source"] else "")]
    if s["unpriced_calls"]:
        out.append(f"  unpriced (no price known, not guessed): {s['unpriced_calls']:,} call(s): {s['unpriced_models']}")
    if s["whatif_achievable_usd"] is not None and s["whatif_nocache_usd"]:
        base = s["whatif_nocache_usd"]
        out.append(f"  what-if on {s['whatif_calls']:,} call(s): no caching {_usd(base)}, actual "
                   f"{_usd(s['whatif_actual_usd'])}, achievable PCER {_pct(s['whatif_achievable_pcer'])} "
                   f"{_usd(s['whatif_achievable_usd'])} ({_pct(1 - s['whatif_achievable_usd'] / base)} saved), "
                   f"stable prefix {_usd(s['whatif_stable_usd'])} ({_pct(1 - s['whatif_stable_usd'] / base)} saved)")
    else:
        out.append(f"  what-if savings: n/a ({s['whatif_reason']})")
    if s["idle_cost_usd"] is not None:
        out.append(f"  idle KV memory: {s['idle_gpu_hours']:,.3f} GPU-hours = {_usd(s['idle_cost_usd'])} "
                   f"at ${s['gpu_hour_price_usd']:g}/GPU-hour ({s['gpu_cost_reason']})")
    return out


def run_lines(result) -> list[str]:
    """What `kvreport run` prints at the end (a measure.api.RunResult): the run's status and DB, each
    experiment's findings, what failed. With --quiet only the first line, so it leads with the run."""
    out = [f"run {result.run_id} {result.status}: {result.n_experiments} experiments -> {result.db}"]
    out += [f"  - {line}" for line in result.summary]
    if result.failures:
        out.append(f"FAILED: {len(result.failures)} of {result.n_experiments} experiments (their results are "
                   "missing; the others are stored):")
        out += [f"  - {name}: {reason}" for name, reason in result.failures]
    return out
