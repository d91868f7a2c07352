"""The words kvreport judges with, defined once: a claim's verdict in the claims ledger (analysis/claims.py)
and a metric's change between two runs of one configuration (analysis/regressions.py).

Python imports them from here; the SQL receives the verdicts as named parameters ($confirmed, $refuted, ...,
see SQL_PARAMETERS: a claim query never spells a verdict as a literal); the templates read them as the globals
`Verdict` and `Change` (analysis/site/render.py)."""
from __future__ import annotations


class Verdict:
    """A claim's verdict, in the order the claims page's legend lists them."""
    CONFIRMED = "confirmed"
    REFUTED = "refuted"
    DIFFERS_BY_HARDWARE = "differs by hardware"
    EXPECTED = "expected"
    INCONSISTENT = "inconsistent"
    UNSUPPORTED = "unsupported"
    GPU_PENDING = "not yet measured on a GPU"  # a GPU measurement with only CPU evidence (claims_verdicts.sql)
    NOT_MEASURED = "not measured"


class Change:
    """How one metric moved from a baseline run to a later run of the same configuration."""
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    WITHIN_NOISE = "within noise"  # the medians moved, the interquartile ranges still overlap
    CHANGED = "changed"            # moved, and the metric says neither lower nor higher is better
    UNCHANGED = "unchanged"
    NOT_COMPARABLE = "not comparable"


def _words(cls) -> dict[str, str]:
    """NAME -> word for every constant of `cls`, in the order they are defined."""
    return {name: value for name, value in vars(cls).items() if name.isupper()}


VERDICTS = list(_words(Verdict).values())
# The parameter each verdict is bound to in SQL: $confirmed, $differs_by_hardware, $gpu_pending, ...
SQL_PARAMETERS = {name.lower(): value for name, value in _words(Verdict).items()}
