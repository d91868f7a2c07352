"""The bill in dollars: every audited call priced from its provider and model.

Rates are looked up ONCE per (provider, model, price period, input-size tier) in Python, into a small
table (_price_rows); every call's cost is then SQL arithmetic on the one row that applies to it
(sql/cost/keyed*.sql finds it, sql/cost/rated_calls.sql prices each call, sql/metrics/per_session.sql sums
them per session, sql/cost/prices.sql and sql/cost/audit_cost.sql per price row and audit). No per-row
Python, so pricing costs a join, not a loop.

Where rates come from, first match wins:
  1. a `--prices FILE` (TOML or JSON, prices_file.py) entry whose model (and provider, if given) matches the call's
     logged response or request model: negotiated prices, self-hosted models;
  2. genai-prices' bundled snapshot (maintained by Pydantic, works offline). Its prices can change over
     time (a new price from a date, off-peak hours) and by prompt size (a tier above N input tokens),
     so one model can have several rows;
  3. otherwise the model is unknown: its calls are counted and listed, with NULL cost, never guessed.

Token conventions. token_calls follows OpenTelemetry: input_tokens is ALL input, cache reads
(cached_input_tokens) and cache writes (cache_creation_input_tokens) included; the ingest converted each
provider's own convention (Anthropic's input_tokens excludes both, OpenAI's includes its cached tokens and
has no writes). So the uncached part is input - read - write for every format, and is priced at the
input rate, reads at the cache-read rate, writes at the cache-write rate.

Per-token rates are not read from genai-prices' fields but measured through its own calc_price on probe
usages (1 token class at a time), so whatever it does with a missing rate (a cache read priced as input
when the model has no cache-read price, say) or a per-request fee is what the SQL does too.
"""
from __future__ import annotations

import datetime as _dt
import threading
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING

from .prices_file import PriceBook, Rate
from .sqlfiles import run_sql
from .steps import Statement

if TYPE_CHECKING:
    from .pipeline import FigureParams

MAX_PERIOD_DAYS = 3700  # time-of-day prices: boundaries for at most ~10 years of log, then one period

# --- genai-prices ------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def genai_info() -> tuple[str | None, _dt.date | None, str | None]:
    """(source label, snapshot date, why not available). genai-prices does not stamp its bundled data
    with a date, so the snapshot date is the newest dated price change it records that has already taken
    effect (the data is at least that recent; changes it announces for later dates do not count); with
    UpdatePrices active it is the time of the download."""
    try:  # imported here, not at the top: ~0.18 s of imports that prefetch() moves off the start-up path
        import genai_prices
        from genai_prices import data_snapshot, types
    except ImportError as exc:
        return None, None, f"genai-prices is not installed ({exc}); give --prices FILE"
    snap = data_snapshot.get_snapshot()
    if snap.from_auto_update:
        return f"genai-prices {genai_prices.__version__} (downloaded)", snap.timestamp.date(), None
    newest, today = None, _dt.datetime.now(_dt.timezone.utc).date()
    for prov in snap.providers:
        for m in prov.models:
            conds: list = list(m.prices) if isinstance(m.prices, list) else []
            conds += list(m.price_variants or ())
            for c in conds:
                if isinstance(c.constraint, types.StartDateConstraint) and c.constraint.start_date <= today:
                    d = c.constraint.start_date
                    newest = d if newest is None or d > newest else newest
    return f"genai-prices {genai_prices.__version__} (bundled snapshot)", newest, None


def prefetch() -> None:
    """Load genai-prices' data (~0.2 s of Python) in a background thread while DuckDB reads the logs
    (it releases the GIL), so pricing adds no start-up time to a big audit."""
    threading.Thread(target=genai_info, name="kvreport-genai-prices", daemon=True).start()


def _genai_model(provider: str | None, ref: str):
    """(provider, model) of genai-prices for a logged model name, or (None, why not)."""
    from genai_prices import data_snapshot

    try:
        return data_snapshot.get_snapshot().find_provider_model(ref, None, provider, None), None
    except LookupError as exc:
        return None, str(exc)


def _boundaries(model, lo: _dt.datetime, hi: _dt.datetime) -> list[_dt.datetime]:
    """Instants in (lo, hi] where the model's price can change (naive UTC, as the audit's timestamps)."""
    from genai_prices import types

    out: set[_dt.datetime] = set()
    conds = model.prices if isinstance(model.prices, list) else []
    for cp in conds:
        c = cp.constraint
        if isinstance(c, types.StartDateConstraint):
            out.add(_dt.datetime.combine(c.start_date, _dt.time(0)))
        elif isinstance(c, types.TimeOfDateConstraint):
            day, last = lo.date() - _dt.timedelta(days=1), hi.date() + _dt.timedelta(days=1)
            if (last - day).days > MAX_PERIOD_DAYS:
                continue  # a decade of daily periods: price the whole span at its start instead
            while day <= last:
                for t in (c.start_time, c.end_time):
                    b = _dt.datetime.combine(day, t)
                    if b.tzinfo is not None:
                        b = b.astimezone(_dt.timezone.utc).replace(tzinfo=None)
                    out.add(b)
                day += _dt.timedelta(days=1)
    return sorted(b for b in out if lo < b <= hi)


def _tier_starts(model, at: _dt.datetime) -> list[int]:
    from genai_prices import types

    mp = model.get_prices(at)
    starts: set[int] = set()
    for v in vars(mp).values():
        if isinstance(v, types.TieredPrices):
            starts.update(t.start for t in v.tiers)
    return sorted(starts)


def _probe_rate(model, provider, at: _dt.datetime, n: int) -> Rate:
    """Rates in force at `at` for a call with n input tokens, measured through calc_price: the price of
    n tokens of one class, less the price of an empty call (a per-request fee, if any)."""
    from genai_prices import Usage

    def price(**usage) -> Decimal:
        return model.calc_price(Usage(**usage), provider, genai_request_timestamp=at).total_price

    fee = price()
    base = price(input_tokens=n)
    per_m = Decimal(1_000_000) / n
    return Rate(float((base - fee) * per_m),
                float((price(input_tokens=n, cache_read_tokens=n) - fee) * per_m),
                float((price(input_tokens=n, cache_write_tokens=n) - fee) * per_m),
                float((price(input_tokens=n, output_tokens=n) - base) * per_m),
                float(fee))


def _probe_n(above: int | None, upto: int | None) -> int:
    """An input size inside the tier (above, upto]: calc_price picks the tier from it."""
    if above is not None:
        return above + 1
    return max(1, min(1_000_000, upto if upto is not None else 1_000_000))


def _genai_rows(provider_m, model, lo: _dt.datetime, hi: _dt.datetime) -> list[dict]:
    """One row per (price period, input tier) of the model over [lo, hi]; the first period reaches back
    and the last forward without bound (valid_from / valid_to NULL)."""
    cuts = _boundaries(model, lo, hi)
    periods: list[list] = []  # [valid_from, valid_to, ((above, upto, Rate), ...)]
    for s, e in zip([lo] + cuts, cuts + [None]):
        tiers = _tier_starts(model, s)
        bands = tuple((above, upto, _probe_rate(model, provider_m, s, _probe_n(above, upto)))
                      for above, upto in zip([None, *tiers], [*tiers, None]))
        if periods and periods[-1][2] == bands:
            periods[-1][1] = e  # same prices as the period before (a date that changed another model)
        else:
            periods.append([s, e, bands])
    periods[0][0] = None
    return [dict(valid_from=s, valid_to=e, above_input_tokens=above, upto_input_tokens=upto, rate=rate)
            for s, e, bands in periods for above, upto, rate in bands]


# --- the audit step ------------------------------------------------------------------------------------

@dataclass
class _Key:
    provider_name: str | None
    response_model: str | None
    request_model: str | None
    n_calls: int
    t_lo: _dt.datetime | None
    t_hi: _dt.datetime | None
    untimed: bool


def _rows_for(key: _Key, book: PriceBook, now: _dt.datetime) -> list[dict]:
    model_name = key.response_model or key.request_model
    common = dict(model=model_name)
    o = book.override_for(key.provider_name, (key.response_model, key.request_model))
    if o is not None:
        return [dict(common, rate=o.rate, valid_from=None, valid_to=None, above_input_tokens=None,
                     upto_input_tokens=None, price_source=f"override: {o.where}", snapshot_date=book.override_date,
                     matched_provider=o.provider, matched_model=o.model, untimed=True)]
    if not model_name:
        return [dict(common, unknown_reason="no model named in the log")]
    source, snapshot_date, unavailable = genai_info()
    if unavailable:
        return [dict(common, unknown_reason=unavailable)]
    found, why = None, None
    for ref in dict.fromkeys(m for m in (key.response_model, key.request_model) if m):
        found, why = _genai_model(key.provider_name, ref)
        if found:
            break
    if not found:
        return [dict(common, unknown_reason=f"{source} has no price for it ({why}); give --prices FILE")]
    provider_m, model = found
    lo = min(t for t in (key.t_lo, now if key.untimed else None) if t is not None)
    hi = max(t for t in (key.t_hi, now if key.untimed else None) if t is not None)
    rows = _genai_rows(provider_m, model, lo, hi)
    for r in rows:
        r.update(common, price_source=source, snapshot_date=snapshot_date, matched_provider=provider_m.id,
                 matched_model=model.id,
                 untimed=key.untimed and (r["valid_from"] is None or r["valid_from"] <= now)
                 and (r["valid_to"] is None or now < r["valid_to"]))
    return rows


_ROW_COLS = ("row_id", "provider_name", "response_model", "request_model", "model", "known", "untimed",
             "valid_from", "valid_to", "above_input_tokens", "upto_input_tokens", "input_usd_mtok",
             "cache_read_usd_mtok", "cache_write_usd_mtok", "output_usd_mtok", "request_usd", "price_source",
             "snapshot_date", "matched_provider", "matched_model", "unknown_reason")


# The (provider, response model, request model) of one call, and the rest of its label: one big log of one model
# is the common case.
FIRST_KEY = Statement("SELECT provider_name, response_model, request_model, source, format, system_tokens_source "
                      "FROM _calls LIMIT 1")


def _keys(con) -> tuple[list[_Key], bool]:
    """The distinct (provider, response model, request model) of this audit's calls, each with its time span,
    and whether every call has the first call's key, file, format and system-token source. One big log of one
    model is the common case: a scan comparing with the first call (no hashing of three strings per call) finds
    it, and only otherwise do the calls get grouped."""
    first = FIRST_KEY.row(con)
    if first is None:
        return [], False
    others, n, lo, hi, untimed, other_labels = run_sql(con, "cost/one_key_span", **first).fetchone()
    if not others:
        key = _Key(first["provider_name"], first["response_model"], first["request_model"], n, lo, hi, untimed)
        return [key], not other_labels
    return merge_keys([key_spans(con)]), False


def _one_row_for_all(rows: list[dict], key: _Key) -> bool:
    """True when every call of `key` (the audit's one key) gets the same price row, or none: no rows, or one row
    without periods or tiers that also prices the untimed calls (cost/keyed.sql's kv_price_applies)."""
    if not rows:
        return True
    if len(rows) > 1:
        return False
    row = rows[0]
    unbounded = all(row[c] is None for c in ("valid_from", "valid_to", "above_input_tokens", "upto_input_tokens"))
    return unbounded and (bool(row["untimed"]) or not key.untimed)


def _price_rows(keys: list[_Key], book: PriceBook, now: _dt.datetime) -> list[dict]:
    out: list[tuple] = []
    for k in keys:
        for r in _rows_for(k, book, now):
            rate = r.get("rate")
            out.append((len(out) + 1, k.provider_name, k.response_model, k.request_model, r["model"], rate is not None,
                        r.get("untimed", True), r.get("valid_from"), r.get("valid_to"), r.get("above_input_tokens"),
                        r.get("upto_input_tokens"), *(
                            (rate.input_mtok, rate.cache_read_mtok, rate.cache_write_mtok, rate.output_mtok,
                             rate.request_usd) if rate else (None,) * 5),
                        r.get("price_source"), r.get("snapshot_date"), r.get("matched_provider"),
                        r.get("matched_model"), r.get("unknown_reason")))
    return [dict(zip(_ROW_COLS, row)) for row in out]


def price_table(keys: list[_Key], book: PriceBook | None) -> list[dict]:
    """The _price_rows of an audit whose calls name these (provider, models) keys: rates looked up once per
    model, period and tier."""
    now = _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None, microsecond=0)
    return _price_rows(keys, book or PriceBook(), now)


def key_spans(con) -> list[tuple]:
    """The (provider, response model, request model, calls, first time, last time, any untimed) of the calls
    on `con`, grouped: one share's, which `merge_keys` adds up to the whole audit's keys."""
    return run_sql(con, "cost/key_spans").fetchall()


def merge_keys(shares: list[list[tuple]]) -> list[_Key]:
    """The audit's keys from its shares' `key_spans`, as `_keys` finds them on all the calls at once."""
    out: dict[tuple, list] = {}
    for rows in shares:
        for p, s, q, n, lo, hi, untimed in rows:
            k = out.setdefault((p, s, q), [0, None, None, False])
            k[0] += n
            k[1] = lo if k[1] is None or (lo is not None and lo < k[1]) else k[1]
            k[2] = hi if k[2] is None or (hi is not None and hi > k[2]) else k[2]
            k[3] = k[3] or bool(untimed)
    return [_Key(*key, *v) for key, v in sorted(out.items(), key=lambda kv: tuple((x is None, x or "") for x in kv[0]))]


def price_keys(con, p: FigureParams) -> FigureParams:
    """The rates of this audit's calls (pipeline.SESSION_FIGURES, before cost/keyed.sql): looked up here from
    the --prices book once per model, period and tier, unless p.price_rows (`price_table`'s, for the
    n_price_keys keys of the whole audit when these calls are one share of it) gives them."""
    if p.price_rows is None:
        keys, same_label = _keys(con)
        rows = price_table(keys, p.price_book)
        p = replace(p, price_rows=rows, n_price_keys=len(keys),
                    one_label=same_label and len(keys) == 1 and _one_row_for_all(rows, keys[0]))
    return replace(p, one_price_key=p.n_price_keys == 1)


def insert_price_rows(con, p: FigureParams) -> None:
    """The rates into _price_rows."""
    for row in p.price_rows or []:
        run_sql(con, "cost/price_row", **row)
