"""Runs as configurations: the device, model and dtype a run measured. A later run of one configuration
supersedes the earlier ones on the pages (the comparison shows how they changed; the CSVs keep them).

The runs shown: a DB may hold a million runs, and a page that listed each would be neither readable nor
buildable, so the site and `kvreport findings` show a bounded set of them in full (`Shown`: the newest runs,
the newest run of each recent configuration, the runs of the newest audits, the newest standalone audits and
replays). `restrict` makes a
connection read only their rows: a TEMP view per table, named as the table, shadows it, so every query and
page reads the shown runs without knowing about it. Every run's rows stay in the DB file and in the CSV and
Parquet export, which read the tables themselves."""
from __future__ import annotations

from dataclasses import dataclass, field

from kvreport.runner.core.migrations import table_columns
from kvreport.runner.core.untrusted import database_name, quoted

from .queries import sql_text

MAX_RUNS = 20      # the newest runs shown in full
MAX_CONFIGS = 20   # ... plus the newest run of each of the configurations most recently run
MAX_AUDITS = 20    # standalone audits (no run), newest first; a shown run's audits come with it
MAX_REPLAYS = 20   # replays (no run), newest first


def config_key(run: dict) -> tuple:
    """A configuration: device, model and dtype. Runs of one configuration supersede each other."""
    return (run.get("device_name") or "", run.get("model") or "", run.get("dtype") or "")


def run_configs(con) -> list[dict]:
    """Every run's id and configuration (device_name, model, dtype: what config_key reads), one narrow row per
    run: `kvreport findings` needs no more of a run, and a DB of a million runs would not fit as runs.sql's."""
    cur = con.execute("SELECT run_id, device_name, model, dtype FROM runs ORDER BY run_id")
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def latest_per_config(run_ids, runs: list[dict]) -> set[int]:
    """The newest run of each configuration among `run_ids`; `runs` are the rows of queries/runs.sql."""
    by_id = {r["run_id"]: r for r in runs}
    latest: dict[tuple, int] = {}
    for rid in run_ids:
        key = config_key(by_id.get(rid, {}))
        latest[key] = max(latest.get(key, rid), rid)
    return set(latest.values())


@dataclass
class Shown:
    """Which runs, audits and replays a site shows in full, against how many the DB holds."""
    run_ids: list[int]
    n_runs: int
    n_configs: int
    n_configs_shown: int
    n_audits: int = 0
    n_audits_shown: int = 0
    n_replays: int = 0
    n_replays_shown: int = 0
    limits: dict = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """True when nothing is left out (the pages then read the tables themselves)."""
        return (len(self.run_ids) == self.n_runs and self.n_audits_shown == self.n_audits
                and self.n_replays_shown == self.n_replays)

    def summary(self) -> str | None:
        """What is shown of what the DB holds, as a phrase ("20 of 10,000 runs (...); 3 of 50 audits"); None
        when nothing is left out."""
        if self.complete:
            return None
        parts = []
        if len(self.run_ids) < self.n_runs:
            parts.append(f"{len(self.run_ids):,} of {self.n_runs:,} runs (the newest {self.limits['runs']:,}, "
                         f"the newest run of each of the {self.n_configs_shown:,} configurations most recently run "
                         f"(of {self.n_configs:,}) and the runs of the newest audits)")
        if self.n_audits_shown < self.n_audits:
            parts.append(f"{self.n_audits_shown:,} of {self.n_audits:,} audits")
        if self.n_replays_shown < self.n_replays:
            parts.append(f"{self.n_replays_shown:,} of {self.n_replays:,} replays")
        return "; ".join(parts)


def shown(con, extra_runs=(), max_runs: int = MAX_RUNS, max_configs: int = MAX_CONFIGS,
          max_audits: int = MAX_AUDITS, max_replays: int = MAX_REPLAYS) -> Shown:
    """The runs, audits and replays to show, chosen in SQL (analysis/queries/shown_runs.sql and friends) and
    kept in the connection's TEMP tables _shown_runs, _shown_audits and _shown_replays; `extra_runs` are
    shown besides (a run asked for by id). Nothing per run is read into Python but the shown ids."""
    params = {"max_runs": max_runs, "max_configs": max_configs, "max_audits": max_audits,
              "extra": [int(r) for r in extra_runs]}
    con.execute("CREATE OR REPLACE TEMP TABLE _shown_runs AS " + _query("shown_runs"), params)
    con.execute("CREATE OR REPLACE TEMP TABLE _shown_audits AS " + _query("shown_audits"), {"max_audits": max_audits})
    con.execute("CREATE OR REPLACE TEMP TABLE _shown_replays AS SELECT replay_id FROM replays "  # the newest
                "ORDER BY created_at DESC NULLS LAST, replay_id DESC LIMIT $max_replays", {"max_replays": max_replays})
    (n_runs, n_configs, n_configs_shown, n_audits, n_audits_shown, n_replays, n_replays_shown) = con.execute(
        _query("shown_counts")).fetchone()
    run_ids = [r for (r,) in con.execute("SELECT run_id FROM _shown_runs ORDER BY run_id").fetchall()]
    return Shown(run_ids, n_runs, n_configs, n_configs_shown, n_audits, n_audits_shown, n_replays, n_replays_shown,
                 limits={"runs": max_runs, "configs": max_configs, "audits": max_audits, "replays": max_replays})


def restrict(con, what: Shown) -> None:
    """Make `con` read only the shown rows: a TEMP view over each of the DB file's tables keyed by run, audit or
    replay, under the table's own name (DuckDB looks in the TEMP catalogue first). Nothing is done when
    nothing is left out, so a small DB is read exactly as it is."""
    if what.complete:
        return
    db = quoted(database_name(con))  # the file's own catalogue: inside the view, `main.t` would be the view
    for table, cols in sorted(table_columns(con).items()):
        if "audit_id" in cols:
            keep = "audit_id IN (SELECT audit_id FROM _shown_audits)"
        elif "replay_id" in cols:
            keep = "replay_id IN (SELECT replay_id FROM _shown_replays)"
        elif "run_id" in cols:
            keep = "run_id IS NULL OR run_id IN (SELECT run_id FROM _shown_runs)"
        else:
            continue
        con.execute(f"CREATE OR REPLACE TEMP VIEW {quoted(table)} AS "
                    f"SELECT * FROM {db}.main.{quoted(table)} WHERE {keep}")


def _query(name: str) -> str:
    return sql_text(name).strip().rstrip(";")
