"""Shared fixtures for the site tests: the committed fixture DB (made by scripts/make_golden.py from real
`kvreport run --quick` runs), a site built from it once per session, and a DB whose strings are XSS
payloads, written through the Store like any run."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Under xdist every core already runs a worker: torch's intra-op threads (and the subprocesses tests start,
# which inherit this) would only spin against each other. On the 2-core VM the fast suite's 373 CPU-s became ~250.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_DB = ROOT / "tests" / "fixtures" / "site" / "kvreport.duckdb"
GOLDEN = ROOT / "tests" / "golden" / "site"
CHROMIUM = "/usr/bin/chromium"

# Each payload sets window.__xss to its number if it ever executes; the browser test checks it never does.
PAYLOADS = {
    "script": "<script>window.__xss=1</script>",
    "attr": "\" onmouseover=\"window.__xss=2\" data-x=\"",
    "img": "<img src=x onerror=\"window.__xss=3\">",
    "svg": "'><svg onload=window.__xss=4>",
    "single": "' onfocus='window.__xss=5' autofocus='",
}


def markup(field: str) -> str:
    """A markup payload naming its field: it reads back as this exact text only where it was escaped."""
    return f'<img src=x onerror="window.__xss=6">{field}<script>window.__xss=1</script>'


# Free text that reaches a page, by field: the runs row, and an audit's logs, file names and price file.
FIELD_PAYLOADS = {f: markup(f) for f in ("label", "device", "session", "request-model", "reject-reason", "prompt",
                                          "instruction")}
# A file name cannot hold "/": the file-name payloads are an element and a quote breakout. The price file's
# element has no src, so a broken escape there is caught by the page checks, not first by the build's link check.
FIELD_PAYLOADS["source-file"] = '<img src=x onerror="window.__xss=7">source-file\' onfocus=\'window.__xss=5\''
FIELD_PAYLOADS["price-file"] = '<svg onload="window.__xss=8">price-file" onmouseover="window.__xss=2"'


@pytest.fixture(scope="session")
def fixture_db() -> Path:
    if not FIXTURE_DB.is_file():
        pytest.fail(f"{FIXTURE_DB} is missing: run `python scripts/make_golden.py` to create it")
    return FIXTURE_DB


@pytest.fixture(scope="session")
def built_site(fixture_db, tmp_path_factory) -> Path:
    from kvreport.analysis.site import build_site

    out = tmp_path_factory.mktemp("site") / "site"
    # Build from a copy: the build must never need to write next to the DB it reads.
    db = tmp_path_factory.mktemp("db") / "kvreport.duckdb"
    shutil.copyfile(fixture_db, db)
    build_site(db, out)
    return out


def write_payload_db(path: Path) -> dict:
    """A DB whose run metadata, labels, skip reasons and model name are script/attribute payloads, with
    memory rows so the memory page, its charts, the claims and the headlines all carry them."""
    from kvreport.runner.core.store import Store

    model = PAYLOADS["img"] + PAYLOADS["script"]
    meta = {
        "device_kind": "cpu", "device_name": FIELD_PAYLOADS["device"] + PAYLOADS["attr"] + "CPU", "model": model,
        "model_source": "builtin",
        "dtype": "float32", "weights_random": True, "quick": True, "iterations": "1,2",
        "driver_version": PAYLOADS["svg"], "cuda_version": PAYLOADS["single"], "torch_version": "2.x",
        "transformers_version": PAYLOADS["script"], "python_version": "3.x", "os": PAYLOADS["img"],
        "cpu": PAYLOADS["attr"], "cpu_count": 2, "command_line": PAYLOADS["script"],
        "label": FIELD_PAYLOADS["label"] + PAYLOADS["attr"],
    }
    with Store(path) as store:
        run_id = store.begin_run(meta)
        per_token = 1024
        rows = [{"seq_len": s, "batch_size": b, "kv_bytes": s * b * per_token, "bytes_per_token": float(per_token),
                 "formula_bytes_per_token": per_token, "expected_kv_bytes": s * b * per_token, "cached_tokens": s,
                 "n_layers": 2, "match": True} for b in (1, 2) for s in (16, 64)]
        layers = [{"layer": i, "seq_len": 64, "batch_size": 1, "k_bytes": 64 * 256, "v_bytes": 64 * 256,
                   "cached_tokens": 64, "k_shape": "1x4x64x16"} for i in range(2)]
        store.record_experiment(run_id, "cache_tensors", "ok", None,
                                {"cache_tensors": rows, "kv_per_layer": layers}, duration_s=0.1)
        store.record_experiment(run_id, "allocator_memory", "skipped", PAYLOADS["img"] + " needs CUDA", duration_s=0.0)
        store.record_experiment(run_id, PAYLOADS["script"], "failed", PAYLOADS["attr"], duration_s=0.0)
        store.finish_run(run_id, "complete")
    return {"run_id": run_id, "model": model, "meta": meta}


def write_payload_audit(db: Path) -> None:
    """`kvreport audit` (the real ingest) of two logs into `db`: an OpenAI envelope log and bare objects whose
    session id, model, error message, system prompt (its snippet where calls diverge) and repeated user
    instruction are payloads, in a file with a payload name, priced by a price file with a payload name."""
    import json

    from kvreport.runner.audit.demo import _build_tokenizer  # the demo's word-level tokenizer

    folder = db.parent / "payload-logs"
    folder.mkdir()
    p = FIELD_PAYLOADS
    usage = {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
             "prompt_tokens_details": {"cached_tokens": 499}}
    # The system prompt changes at its top each call (the bloat analysis shows the diverging snippet); the
    # user repeats one instruction (the repeats table shows it).
    envelope = [{"session_id": p["session"], "timestamp": f"2025-01-01T00:0{i}:00Z",
                 "request": {"model": p["request-model"], "messages": [
                     {"role": "system", "content": f"Time {i} {p['prompt']} You are a bot"},
                     *[{"role": "user", "content": p["instruction"]}] * (i + 1)]},
                 "response": {"id": f"c{i}", "object": "chat.completion", "created": 1735689600,
                              "model": p["request-model"], "choices": [], "usage": usage}} for i in range(3)]
    envelope.append({"session_id": "no-response"})  # a reject whose file is the payload-named one
    bare = [{"id": "b1", "object": "chat.completion", "created": 1735689600, "model": "unpriced-model",
             "choices": [], "usage": usage},
            {"error": {"code": "x", "message": p["reject-reason"]}}]
    logs = [folder / (p["source-file"] + ".jsonl"), folder / "bare.jsonl"]
    for path, lines in zip(logs, (envelope, bare)):
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    prices = folder / (p["price-file"] + ".json")
    prices.write_text(json.dumps({"as_of": "2026-11-01", "prices": [
        {"model": p["request-model"], "input_mtok": 1.0, "output_mtok": 2.0}]}), encoding="utf-8")
    tokenizer = folder / "tokenizer.json"
    _build_tokenizer([f"Time 0 1 2 {p['prompt']} You are a bot {p['instruction']}"]).save(str(tokenizer))
    quiet_audit(logs, db, prices=prices, tokenizer=str(tokenizer))


@pytest.fixture(scope="session")
def payload_site(tmp_path_factory) -> Path:
    from kvreport.analysis.site import build_site

    base = tmp_path_factory.mktemp("payload")
    db = base / "payload.duckdb"
    write_payload_db(db)
    write_payload_audit(db)
    out = base / "site"
    build_site(db, out)
    return out


def chromium_available() -> tuple[bool, str]:
    if not Path(CHROMIUM).exists():
        return False, f"{CHROMIUM} is not installed (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False, "playwright is not installed (pip install playwright; never `playwright install`)"
    return True, ""


def run_cli(*argv) -> int:
    """`kvreport ARGV...` in this process (so tests can capture its output); its exit code."""
    from kvreport.runner.cli import main

    try:
        main([str(a) for a in argv])
    except SystemExit as exc:
        return exc.code
    return 0


def cli_in_process(*args):
    """`kvreport ARGS` run by main() in this process, its output captured: a CompletedProcess like
    `cli_process` gives, without a child's start-up (Python, and torch for `run`). An exception main() lets
    escape is raised here, so a traceback fails the test as it would show in the child's stderr."""
    import contextlib
    import io
    import subprocess

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_cli(*args) or 0  # sys.exit(None) is a success
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def cli_process(*args, timeout=300, **kw):
    """`python -m kvreport.runner ARGS` in a child process (signals, exit codes, stderr as a user sees them);
    `kw` goes to subprocess.run (cwd, env). In-process (`run_cli`) is faster where none of that matters."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "kvreport.runner", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, **kw)


def imported_modules(*args, cwd=None, exit_code=0) -> set[str]:
    """The modules `python -X importtime -m kvreport.runner ARGS` imported: a child process, because this one
    has imported everything already. Asserts the command exited with `exit_code`."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "kvreport.runner", *map(str, args)],
                       capture_output=True, text=True, cwd=cwd, timeout=300)
    assert r.returncode == exit_code, r.stderr[-2000:]
    names = {line.rsplit("|", 1)[1].strip() for line in r.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    assert names, "no -X importtime output"
    return names


def audit_result(paths, db: Path, *, on_event=None, progress: bool = False, **options):
    """The audit (runner/audit/api.py) of PATHS into DB in this process, nothing printed: its AuditResult.
    `options` are AuditRequest's fields (prices=, tokenizer=, strict=, ...)."""
    from kvreport.runner.audit.api import AuditRequest, audit

    return audit(list(paths), AuditRequest(**options), db=Path(db), on_event=on_event, progress=progress)


def quiet_audit(paths, db: Path, **options) -> dict:
    """`audit_result`'s summary: the audits row."""
    return audit_result(paths, db, **options).summary


def audit_printed(paths, db: Path, **options) -> tuple[dict, list[str]]:
    """`kvreport audit PATHS --db DB` in this process: its summary and every line it printed."""
    from kvreport.runner.audit.api import AuditRequest, audit
    from kvreport.runner.commands.output import Output, audit_lines

    lines: list[str] = []
    request = AuditRequest(**options)
    with Output(echo=lines.append, bar=False) as out:
        result = audit(list(paths), request, db=Path(db), on_event=out)
    return result.summary, lines + audit_lines(result, request)


def quiet_run(db: Path, model: str = "tiny-gpt2", dtype: str = "float32", groups="cache", **request):
    """`kvreport run --quick --device cpu` (runner/measure/api.py) into DB in this process, nothing printed:
    its RunResult. `request` holds RunRequest's other fields (only=, label=, ...)."""
    from kvreport.runner.measure.api import RunRequest, run

    request = dict(device="cpu", quick=True) | request
    return run(RunRequest(model=model, dtype=dtype, groups=groups, **request), db=Path(db))


def audit_and_open(tmp_path: Path, *files, db_name: str = "a.duckdb", **options):
    """`quiet_audit` of FILES into tmp_path/db_name: its summary and a read-only connection to the DB."""
    import duckdb

    db = tmp_path / db_name
    return quiet_audit(files, db, **options), duckdb.connect(str(db), read_only=True)


@pytest.fixture(scope="module")
def tiny():
    """The built-in tiny-gpt2 on the CPU in float32, loaded once per test module."""
    import torch

    from kvreport.runner.measure.models import load_model

    return load_model("tiny-gpt2", torch.device("cpu"), torch.float32)


def one_clear_line(r) -> str:
    """The one line a failed command printed: non-zero exit, no traceback, no "internal error"."""
    err = r.stderr.strip()
    assert r.returncode != 0 and len(err.splitlines()) == 1, (r.returncode, err[-2000:])
    assert "Traceback" not in err and "internal error" not in err, err
    return err


def audit_tables(paths, tmp_path: Path, **options):
    """The whole audit on an in-memory DB, priced as gpt2's formula: (every audit table's rows but their
    timings, the AuditResult). `options` are engine.AuditOptions fields (fmt, fast_read, keys...)."""
    from kvreport.runner.audit import engine
    from kvreport.runner.audit.kv_pricing import Memory, Pricing
    from kvreport.runner.core.connections import connect
    from kvreport.runner.core.migrations import apply_steps

    con = connect()
    try:
        apply_steps(con, 0)
        res = engine.run_audit(con, list(paths), engine.AuditOptions(workdir=str(tmp_path), **options),
                               audit_id="a", run_id=None, model="gpt2", pricing=Pricing(36864.0, "formula", "test"),
                               memory=Memory(None, None))
        tables = engine.fetch(con, res)
    finally:
        con.close()
    for rows in tables.values():
        for r in rows:
            for k in ("created_at", "duration_s"):
                r.pop(k, None)
    return tables, res
