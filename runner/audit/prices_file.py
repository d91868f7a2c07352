"""The user's own rates: a `--prices` TOML or JSON file read into a PriceBook, checked entry by entry (a bad
entry is one PricesFileError naming the file, entry and field). dollars.py prices calls with it."""
from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UserError

# A price file is a hand-written list of a few models: past these it is not one, and is refused unread.
MAX_PRICES_FILE_BYTES = 4 * 2**20
MAX_RATE_USD = 1e6          # per million tokens ($1 a token; the dearest listed rates are hundreds)
MAX_REQUEST_USD = 1e4       # a fixed fee per call
MAX_NAME_CHARS = 256        # a model or provider name
_RATE_KEYS = ("input_mtok", "cache_read_mtok", "cache_write_mtok", "output_mtok")


class PricesFileError(UserError):
    """A --prices file that cannot be used; the message names the file, entry and field."""


@dataclass(frozen=True)
class Rate:
    """USD per million tokens of each class, plus a fixed fee per call."""
    input_mtok: float
    cache_read_mtok: float
    cache_write_mtok: float
    output_mtok: float
    request_usd: float = 0.0


@dataclass(frozen=True)
class Override:
    model: str               # matched case-insensitively against the logged response or request model
    provider: str | None     # None: any provider
    rate: Rate
    where: str               # "prices.toml entry 2", for the price_source column


@dataclass(frozen=True)
class PriceBook:
    overrides: tuple[Override, ...] = ()
    override_date: _dt.date | None = None

    def override_for(self, provider: str | None, models: tuple[str | None, ...]) -> Override | None:
        names = {m.lower() for m in models if m}
        for o in self.overrides:
            if o.model.lower() in names and (o.provider is None or (provider or "").lower() == o.provider.lower()):
                return o
        return None


def load_prices_file(path: str | Path) -> PriceBook:
    """Read a TOML or JSON price file:

        as_of = 2026-11-01            # optional: the date of these prices (default: the file's mtime)
        [[prices]]
        model = "gpt-4o-mini"         # as the log names it (response or request model)
        provider = "openai"           # optional: only calls of this provider
        input_mtok = 0.12             # USD per million uncached input tokens
        output_mtok = 0.48
        cache_read_mtok = 0.06        # optional, default input_mtok (no discount unless you say so)
        cache_write_mtok = 0.15       # optional, default input_mtok
        request_usd = 0.0             # optional fixed fee per call

    JSON: the same keys, {"as_of": "2026-11-01", "prices": [{...}, ...]}."""
    p = Path(path)
    try:
        with open(p, "rb") as f:  # bounded: a multi-GB file is refused, not read into memory
            raw = f.read(MAX_PRICES_FILE_BYTES + 1)
    except OSError as exc:
        raise PricesFileError(f"--prices {p}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_PRICES_FILE_BYTES:
        raise PricesFileError(f"--prices {p}: larger than {MAX_PRICES_FILE_BYTES // 2**20} MiB; not a price file")
    try:
        doc = _parse(p, raw)
    except RecursionError:  # [[[[...: nested past Python's stack, where a price file nests three levels
        raise PricesFileError(f"--prices {p}: nested too deeply to be a price file") from None
    except ValueError as exc:  # a number of thousands of digits (Python's int conversion limit)
        why = "a number of thousands of digits" if "digits" in str(exc) else str(exc).splitlines()[0][:120]
        raise PricesFileError(f"--prices {p}: not a price file ({why})") from None
    if not isinstance(doc, dict):
        raise PricesFileError(f"--prices {p}: expected a table/object with a 'prices' list")
    unknown = set(doc) - {"as_of", "prices"}
    if unknown:
        raise PricesFileError(f"--prices {p}: unknown key(s) {', '.join(sorted(map(_short, unknown))[:5])} "
                              "(expected as_of, prices)")
    entries = doc.get("prices")
    if not isinstance(entries, list) or not entries:
        raise PricesFileError(f"--prices {p}: 'prices' must be a non-empty list of entries")
    as_of = _as_of(p, doc.get("as_of"))
    out = []
    for i, e in enumerate(entries, 1):
        where = f"{p.name} entry {i}"
        out.append(_entry(p, i, e, where))
    return PriceBook(tuple(out), as_of)


def _short(text, limit: int = 40) -> str:
    """A key or value from the file as a message shows it: a plain short name as it is, anything else as
    its repr, cut when long."""
    plain = isinstance(text, str) and text.isprintable() and text.isascii() and len(text) <= limit
    text = text if plain else repr(text)
    return text if len(text) <= limit else text[:limit] + "..."


def _parse(p: Path, raw: bytes):
    if p.suffix.lower() == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            raise PricesFileError(f"--prices {p}: TOML needs Python 3.11+; write the prices as JSON") from None
        try:
            doc = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise PricesFileError(f"--prices {p}: not valid TOML ({exc})") from None
    elif p.suffix.lower() == ".json":
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise PricesFileError(f"--prices {p}: not valid JSON (line {exc.lineno}, column {exc.colno}: "
                                  f"{exc.msg})") from None
        except UnicodeDecodeError as exc:
            raise PricesFileError(f"--prices {p}: not valid JSON ({exc})") from None
    else:
        raise PricesFileError(f"--prices {p}: expected a .toml or .json file")
    return doc


def _as_of(p: Path, v) -> _dt.date:
    if v is None:
        return _dt.datetime.fromtimestamp(p.stat().st_mtime, _dt.timezone.utc).date()
    if isinstance(v, _dt.datetime):
        return v.date()
    if isinstance(v, _dt.date):
        return v
    try:
        return _dt.date.fromisoformat(str(v))
    except ValueError:
        raise PricesFileError(f"--prices {p}: as_of: expected a date like 2026-11-01, got {_short(v)}") from None


def _entry(p: Path, i: int, e, where: str) -> Override:
    at = f"--prices {p}: prices[{i}]"
    if not isinstance(e, dict):
        raise PricesFileError(f"{at}: expected a table/object, got {type(e).__name__}")
    allowed = {"model", "provider", "request_usd", *_RATE_KEYS}
    unknown = set(e) - allowed
    if unknown:
        raise PricesFileError(f"{at}: unknown key(s) {', '.join(sorted(map(_short, unknown))[:5])} "
                              f"(expected {', '.join(sorted(allowed))})")
    model = e.get("model")
    if not isinstance(model, str) or not model.strip() or len(model) > MAX_NAME_CHARS:
        raise PricesFileError(f"{at}: model: expected the model name as the log writes it "
                              f"(at most {MAX_NAME_CHARS} characters)")
    provider = e.get("provider")
    if provider is not None and (not isinstance(provider, str) or not provider.strip()
                                 or len(provider) > MAX_NAME_CHARS):
        raise PricesFileError(f"{at}: provider: expected a provider name such as \"openai\"")

    def num(key, default=None):
        v = e.get(key, default)
        if v is None:
            raise PricesFileError(f"{at} ({model}): {key}: missing (USD per million tokens)")
        high = MAX_REQUEST_USD if key == "request_usd" else MAX_RATE_USD
        # An int is compared before float(): 10**400 has no float (OverflowError), and is out of range anyway.
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= high or not math.isfinite(v):
            raise PricesFileError(f"{at} ({model}): {key}: expected a finite number from 0 to {high:g} "
                                  f"(USD{'' if key == 'request_usd' else ' per million tokens'}), got {_short(v)}")
        return float(v)

    inp = num("input_mtok")
    rate = Rate(inp, num("cache_read_mtok", inp), num("cache_write_mtok", inp), num("output_mtok"),
                num("request_usd", 0.0))
    return Override(model.strip(), provider.strip() if provider else None, rate, where)
