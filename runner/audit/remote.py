"""Logs in object storage: `kvreport audit 's3://bucket/logs/*.jsonl.gz'`.

DuckDB's httpfs extension would read s3:// itself, but it is downloaded at run time, which the audit never
does (the registry's duckdb-extension-httpfs package is built for DuckDB 1.5, not the 2.0 the audit runs).
And the audit reads more than DuckDB does: its own Python sniffs each file (format, compression, CSV
header, a cleaned copy of a file with broken bytes). So each object is copied, streamed by s3fs (fsspec)
with the standard AWS credential chain (environment, ~/.aws, the instance's role; AWS_ENDPOINT_URL for an
S3-compatible server), into a scratch folder under the name it has in the bucket, and audited from there
exactly like a local file, stored under its s3:// URL (token_calls.source, audits.sources). s3fs is
imported only when an s3:// path is given (pip install 'kvreport[s3]').
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..core.errors import UserError

SCHEMES = ("s3://",)
# An endpoint that accepts and then says nothing fails within seconds, naming itself (botocore's message gives
# the endpoint URL), instead of retrying for minutes: one attempt per request, and s3fs's own retry once.
CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 5


def url_of(arg) -> str | None:
    """The s3:// URL an argument names, or None. A command-line path has been through pathlib, which makes
    s3://bucket/key s3:/bucket/key."""
    text = str(arg)
    if text.startswith(SCHEMES):
        return text
    if text.startswith("s3:/") and not isinstance(arg, str):
        return "s3://" + text[len("s3:/"):]
    return None


def _filesystem():
    try:
        import s3fs
    except ImportError:
        raise UserError("s3:// paths need s3fs: pip install 'kvreport[s3]'") from None
    fs = s3fs.S3FileSystem(config_kwargs=dict(connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S,
                                              retries={"total_max_attempts": 1}))
    fs.retries = 1  # s3fs's own loop around each call (a class attribute, 5 tries with back-off)
    return fs


def expand(url: str, fs=None) -> list[str]:
    """The objects a URL names, sorted: one object; every object under a prefix ("folder"); a glob's matches.
    A URL that names nothing is an error naming it."""
    fs = fs or _filesystem()
    try:
        if any(c in url for c in "*?["):
            found = sorted(fs.glob(url))
        elif fs.isdir(url):
            found = sorted(fs.find(url))
        else:
            found = [url] if fs.exists(url) else []
    except Exception as exc:  # noqa: BLE001 - botocore's message says what (credentials, bucket, network)
        raise UserError(f"{url}: cannot list ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") \
            from None
    found = [f if f.startswith(SCHEMES) else "s3://" + f for f in found]
    found = [f for f in found if not Path(f.rsplit("/", 1)[-1]).name.startswith(".")]
    if not found:
        raise UserError(f"{url}: no such object" + (" matches" if any(c in url for c in "*?[") else ""))
    return found


def stage(urls: list[str], folder: str | Path) -> dict[Path, str]:
    """Copy each object into its own subfolder of `folder`, under its own name; returns local path -> URL."""
    fs = _filesystem()
    out: dict[Path, str] = {}
    for i, url in enumerate(urls):
        local = Path(tempfile.mkdtemp(prefix=f"{i:06d}-", dir=folder)) / url.rstrip("/").rsplit("/", 1)[-1]
        try:
            with fs.open(url, "rb") as src, open(local, "wb") as dst:
                shutil.copyfileobj(src, dst, 16 << 20)
        except Exception as exc:  # noqa: BLE001 - one line naming the object
            raise UserError(f"{url}: cannot read ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") \
                from None
        out[local] = url
    return out
