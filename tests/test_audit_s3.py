"""Logs in object storage (issue 28): `kvreport audit 's3://bucket/logs/*.jsonl.gz'` gives the audit of the same
files on disk, each call stored under its s3:// URL.

The S3 server is moto's server mode on 127.0.0.1, a STAND-IN for S3 (it speaks the S3 API; no real S3 or MinIO
server is installable from PyPI here), started for this module and stopped after it. Credentials and the
endpoint reach s3fs through the standard AWS environment variables."""
from __future__ import annotations

import gzip
import socket
from pathlib import Path

import duckdb
import pytest

from kvreport.runner.core.errors import UserError
from conftest import quiet_audit

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")
pytestmark = pytest.mark.slow  # starts moto's S3 server for the module

FIX = Path(__file__).parent / "fixtures" / "audit"
LOGS = ("openai.jsonl", "anthropic.jsonl", "litellm.jsonl", "sessions.csv")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def bucket():
    """A bucket on a local S3 stand-in holding the fixture logs under logs/ (two of them gzipped)."""
    import boto3

    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    mp = pytest.MonkeyPatch()
    for k, v in env.items():
        mp.setenv(k, v)
    try:
        s3 = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
        s3.create_bucket(Bucket="traffic")
        for name in LOGS:
            body = (FIX / name).read_bytes()
            key = f"logs/{name}.gz" if name.startswith("open") or name.startswith("lite") else f"logs/{name}"
            s3.put_object(Bucket="traffic", Key=key, Body=gzip.compress(body) if key.endswith(".gz") else body)
        yield "traffic"
    finally:
        mp.undo()
        server.stop()


def _rows(db: Path) -> tuple[list, dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        calls = con.execute("SELECT regexp_extract(source, '[^/]+$') AS f, line, session_id, input_tokens, cost_usd "
                            "FROM token_calls ORDER BY ALL").fetchall()
        cur = con.execute("SELECT n_calls, n_sessions, n_rejects, overall_pcer, leakage_index, cost_usd FROM audits")
        summary = dict(zip([d[0] for d in cur.description], cur.fetchone()))
        sources = [r[0] for r in con.execute("SELECT DISTINCT source FROM token_calls ORDER BY 1").fetchall()]
    finally:
        con.close()
    return calls, summary | {"sources": sources}


def test_a_glob_in_a_bucket_is_the_audit_of_the_same_files_on_disk(tmp_path, bucket):
    local = tmp_path / "local"
    local.mkdir()
    for name in LOGS:
        (local / name).write_bytes((FIX / name).read_bytes())
    quiet_audit([local / n for n in sorted(LOGS)], db=tmp_path / "disk.duckdb")
    # as the command line hands it over: a Path, which pathlib has made s3:/traffic/...
    quiet_audit([Path(f"s3://{bucket}/logs/*")], db=tmp_path / "s3.duckdb")
    disk, s3 = _rows(tmp_path / "disk.duckdb"), _rows(tmp_path / "s3.duckdb")
    strip = [(f.removesuffix(".gz"), *rest) for f, *rest in s3[0]]
    assert strip == disk[0] and len(disk[0]) > 5
    assert {k: v for k, v in s3[1].items() if k != "sources"} == {k: v for k, v in disk[1].items() if k != "sources"}
    assert all(src.startswith(f"s3://{bucket}/logs/") for src in s3[1]["sources"])


def test_a_missing_object_is_one_line_naming_it(tmp_path, bucket):
    with pytest.raises(UserError, match=r"s3://traffic/logs/nope\.jsonl: no such object"):
        quiet_audit(["s3://traffic/logs/nope.jsonl"], db=tmp_path / "a.duckdb")
    assert not (tmp_path / "a.duckdb").exists()


@pytest.mark.ray
def test_the_same_objects_on_ray_give_the_same_audit(tmp_path, bucket):
    """--ray local on the bucket: the copies go to --ray-scratch, where the workers read them."""
    pytest.importorskip("ray")
    from test_audit_ray import assert_same_audit

    url = [Path(f"s3://{bucket}/logs/*")]
    quiet_audit(url, db=tmp_path / "one.duckdb")
    scratch = tmp_path / "scratch"
    quiet_audit(url, db=tmp_path / "ray.duckdb", ray="local", ray_workers=2, ray_scratch=scratch)
    counts = assert_same_audit(tmp_path / "one.duckdb", tmp_path / "ray.duckdb")
    assert counts["token_call_rows"] > 5 and not list(scratch.iterdir())
