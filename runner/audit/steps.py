"""The kinds of step an audit plan (pipeline.py) is made of, and `run`, which runs a plan.

A step is a file of runner/audit/sql/ (`Sql`, or `PerSlice`: once per slice of the call ids), an inline statement
(`Statement`: a setting, a transaction's end), or a Python function (`Py`: what SQL cannot do). Each may carry
`when`, a plain function of the plan's parameters (a frozen dataclass) saying whether it runs; its docstring
says why, in words (`kvreport audit --explain`). SQL takes the parameters each statement names from the
parameters' fields; a Python step may return new parameters (dataclasses.replace) that the later steps see.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, TypeVar, Union

from .sqlfiles import run_sql, run_text

SLICE = 100_000  # call ids per slice: per-call text aggregation cannot spill, so a slice bounds it


@dataclass(frozen=True)
class StepParams:
    """Parameters of a plan: every field is a value the SQL statements may name."""

    def values(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


P = TypeVar("P", bound=StepParams)
Condition = Callable[[Any], bool]


@dataclass(frozen=True)
class Sql:
    """The statements of sql/<name>.sql; `name` may hold {field}s of the parameters ("ingest/{shape}")."""

    name: str
    when: Condition | None = None

    def file(self, params: StepParams) -> str:
        return self.name.format(**params.values()) if "{" in self.name else self.name


@dataclass(frozen=True)
class PerSlice:
    """sql/<name>.sql once per slice [$lo, $hi) of the call ids, for each start `starts` gives."""

    name: str
    starts: Callable[[Any], Iterable[int]]
    when: Condition | None = None


@dataclass(frozen=True)
class Statement:
    """One trivial statement written inline (a setting, BEGIN, COMMIT), with the $parameters it names."""

    text: str
    when: Condition | None = None

    def run(self, con, **params: Any):
        return run_text(con, self.text, **params)

    def row(self, con, **params: Any) -> dict | None:
        """The first row it returns, as a dict (None: no row)."""
        cur = self.run(con, **params)
        row = cur.fetchone()
        return None if row is None else dict(zip([d[0] for d in cur.description], row))

    def value(self, con, **params: Any):
        """The first column of the first row it returns (None: no row)."""
        row = self.run(con, **params).fetchone()
        return None if row is None else row[0]


@dataclass(frozen=True)
class Py:
    """A Python step: fn(con, params) returns new parameters for the later steps, or None."""

    fn: Callable[[Any, Any], Any]
    when: Condition | None = None


Step = Union[Sql, PerSlice, Statement, Py]


def describe(fn: Callable) -> str:
    """A condition or Python step in words: the first line of its docstring, else its name."""
    doc = (fn.__doc__ or "").strip().splitlines()
    return doc[0].rstrip(".") if doc else fn.__name__


def negated(cond: Condition) -> Condition:
    """`cond`'s opposite, described as such."""

    def opposite(params: Any) -> bool:
        return not cond(params)

    opposite.__doc__ = f"not: {describe(cond)}"
    opposite.__name__ = f"not_{cond.__name__}"
    opposite.negates = cond  # type: ignore[attr-defined]  # what --explain names
    return opposite


def run(con, steps: Iterable[Step], params: P, columns: Mapping[str, str] | None = None) -> P:
    """Run `steps` in order on `con`; returns the parameters as the last Python step left them. `columns`: the
    column lists the statements' {placeholders} take (sqlfiles.run_sql)."""
    for step in steps:
        if step.when is not None and not step.when(params):
            continue
        if isinstance(step, Py):
            params = step.fn(con, params) or params
        elif isinstance(step, Statement):
            step.run(con, **params.values())
        elif isinstance(step, Sql):
            run_sql(con, step.file(params), dict(columns or {}), **params.values())
        else:
            values = params.values()
            for lo in step.starts(params):
                run_sql(con, step.name, dict(columns or {}), **dict(values, lo=lo, hi=lo + SLICE))
    return params
