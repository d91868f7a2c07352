"""The words kvreport judges with, defined once: a claim's verdict in the claims ledger (analysis/claims.py)
and a metric's change between two runs of one configuration (analysis/regressions.py).

Python imports them from here (str enums of runner/core/words.py); the SQL receives the verdicts as named
parameters ($confirmed, $refuted, ..., see SQL_PARAMETERS: a claim query never spells a verdict as a literal);
the templates read them as the globals `Verdict` and `Change` (analysis/site/render.py)."""
from __future__ import annotations

from kvreport.runner.core.words import Change, Verdict

__all__ = ["Change", "Verdict", "VERDICTS", "SQL_PARAMETERS"]

VERDICTS = [v.value for v in Verdict]
# The parameter each verdict is bound to in SQL: $confirmed, $differs_by_hardware, $gpu_pending, ...
SQL_PARAMETERS = {v.name.lower(): v.value for v in Verdict}
