"""The command line: the whole path run -> DB -> build, and bad input that must exit cleanly."""
import json
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

# `kvreport ...` runs main() in this process (no Python or torch start-up); cli_process where a child matters.
from conftest import cli_in_process as kvreport, cli_process
from htmldoc import Doc


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("e2e")
    db = tmp / "k.duckdb"
    r = kvreport("run", "--model", "tiny-gpt2", "--quick", "--groups", "allocator,cache", "--only",
                 "allocator_memory,cache_tensors", "--db", str(db))
    assert r.returncode == 0, r.stderr
    return tmp, db, r


def test_run_records_formula_match_and_skip(quick_run):
    _, db, r = quick_run
    assert "measuring on the CPU" in r.stdout
    assert "[1/2] allocator_memory\n" in r.stdout and "[2/2] cache_tensors\n" in r.stdout  # no group or number
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT bytes_per_token, formula_bytes_per_token, match FROM cache_tensors").fetchall()
    assert rows and all(m for _, _, m in rows)
    assert all(b == f for b, f, _ in rows)  # tiny-gpt2 at fp32: 2*2*4*16*4 = 1024 B/token
    assert rows[0][1] == 1024
    status = dict(con.execute("SELECT experiment, status FROM experiments").fetchall())
    assert status == {"allocator_memory": "skipped", "cache_tensors": "ok"}
    run = con.execute("SELECT status, device_kind, weights_random, torch_version, iterations FROM runs").fetchone()
    assert run[:3] == ("complete", "cpu", True) and run[3] and run[4] == "allocator,cache"


@pytest.mark.slow
def test_build_renders_memory_page_with_match_table(quick_run):
    tmp, db, _ = quick_run
    out = tmp / "site"
    r = kvreport("build", "--db", str(db), "--out", str(out))
    assert r.returncode == 0, r.stderr
    memory = Doc((out / "memory.html").read_text())
    text = memory.page_text()
    assert "memory-bytes-per-token" in memory.ids()
    assert "1,024" in text  # bytes/token, measured and formula
    assert (out / "assets" / "plotly.min.js").exists()
    assert (out / "data" / "cache_tensors.csv").exists() and (out / "data" / "kvreport.duckdb").exists()
    for page in out.glob("*.html"):
        html = page.read_text()
        assert "cdn." not in html
        # Relative, never inlined, and only on pages that draw a chart (tests/test_site.py holds the rule).
        assert ('src="assets/plotly.min.js"' in html) == ('class="plot"' in html), page.name
    assert 'src="assets/plotly.min.js"' in (out / "memory.html").read_text()


@pytest.mark.slow
def test_build_is_byte_identical(quick_run, tmp_path):
    _, db, _ = quick_run
    for name in ("a", "b"):  # two processes: each hashes strings with its own seed
        assert cli_process("build", "--db", str(db), "--out", str(tmp_path / name)).returncode == 0
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


def test_export_names_files_after_tables(quick_run, tmp_path):
    _, db, _ = quick_run
    r = kvreport("export", "--db", str(db), "--out", str(tmp_path), "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert {"allocator_memory.csv", "cache_tensors.csv", "kv_per_layer.csv", "runs.csv"} <= {p.name for p in tmp_path.iterdir()}


def test_models_json_lists_builtin_kv_bytes():
    r = kvreport("models", "--json")
    assert r.returncode == 0
    items = {m["name"]: m["bytes_per_token"] for m in json.loads(r.stdout)}
    assert items["gpt2"] == 36_864 and items["llama-3.1-8b"] == 131_072


@pytest.mark.parametrize("fields,message", [
    (dict(groups="cache,1"), "--groups 'cache,1': expected a comma-separated list of allocator, cache, serving"),
    (dict(groups=""), "--groups '': expected"),
    (dict(only="cache_tensors,kv_memory"), "--only kv_memory: no such experiment; expected some of allocator_memory,"),
])
def test_a_run_request_checks_itself(fields, message):
    from kvreport.runner.core.errors import UserError
    from kvreport.runner.measure.api import RunRequest

    with pytest.raises(UserError, match=re.escape(message)):
        RunRequest(**fields)


def test_a_run_request_reads_the_options_text():
    from kvreport.runner.core.groups import parse_groups
    from kvreport.runner.measure.api import RunRequest

    r = RunRequest(groups=" serving,cache,serving", only="cache_tensors, pressure")
    assert r.groups == ("serving", "cache") and r.only == ("cache_tensors", "pressure")
    assert RunRequest().groups == ("allocator", "cache", "serving", "traffic")
    assert parse_groups("1,audit,2", "--iterations") == ("allocator", "traffic", "cache")


@pytest.mark.parametrize("args,needle", [
    (["run", "--model", "gpt5-ultra"], "unknown model 'gpt5-ultra'"),
    (["run", "--device", "cuda", "--model", "tiny-gpt2"], "no CUDA GPU"),
    (["run", "--iterations", "1,7"], "--iterations"),
    (["run", "--iterations", "1", "--groups", "cache"], "not both"),
    (["run", "--dtype", "int3"], "--dtype"),
    (["run", "--model", "/nonexistent/folder/x"], "no such folder"),
])
def test_bad_run_arguments_exit_cleanly(args, needle, tmp_path):
    r = kvreport(*args, "--db", str(tmp_path / "k.duckdb"))
    assert r.returncode != 0
    assert needle in r.stderr
    assert "Traceback" not in r.stderr


def test_unwritable_db_path(tmp_path):
    # A path whose parent is a file: unwritable even for root (directory permissions would not stop root).
    (tmp_path / "afile").write_text("x")
    r = kvreport("run", "--model", "tiny-gpt2", "--quick", "--db", str(tmp_path / "afile" / "k.duckdb"))
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "afile is a file, not a folder" in r.stderr


def test_build_on_foreign_and_empty_db(tmp_path):
    foreign = tmp_path / "f.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE t (x INT)")
    con.close()
    r = kvreport("build", "--db", str(foreign), "--out", str(tmp_path / "s"))
    assert r.returncode != 0 and "not a kvreport DB" in r.stderr and "Traceback" not in r.stderr

    from kvreport.runner.core.store import Store

    Store(tmp_path / "empty.duckdb").close()
    r = kvreport("build", "--db", str(tmp_path / "empty.duckdb"), "--out", str(tmp_path / "s"))
    assert r.returncode != 0 and "holds no runs" in r.stderr
    assert not (tmp_path / "s").exists()  # nothing half-written

    r = kvreport("build", "--db", str(tmp_path / "missing.duckdb"), "--out", str(tmp_path / "s"))
    assert r.returncode != 0 and "no such DB file" in r.stderr


def test_local_checkpoint_folder_loads_with_real_weights(tmp_path):
    import torch

    from kvreport.runner.measure.models import load_model

    lm = load_model("tiny-gpt2", torch.device("cpu"), torch.float32)
    lm.model.save_pretrained(tmp_path / "ckpt")
    loaded = load_model(str(tmp_path / "ckpt"), torch.device("cpu"), torch.float32)
    assert loaded.weights_random is False and loaded.source.startswith("local:")
    a = dict(lm.model.named_parameters())["transformer.h.0.attn.c_attn.weight"]
    b = dict(loaded.model.named_parameters())["transformer.h.0.attn.c_attn.weight"]
    assert torch.equal(a, b)


def test_folder_without_config_is_a_clear_error(tmp_path):
    r = kvreport("run", "--model", str(tmp_path), "--db", str(tmp_path / "k.duckdb"))
    assert r.returncode != 0 and "no config.json" in r.stderr


@pytest.mark.slow
def test_sigterm_marks_the_run_interrupted(tmp_path):
    import signal
    import time

    db = tmp_path / "k.duckdb"
    proc = subprocess.Popen([sys.executable, "-u", "-m", "kvreport.runner", "run", "--model", "tiny-gpt2", "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    for line in proc.stdout:  # wait until the run row exists and experiments are under way
        if line.startswith("[2/") or time.time() > deadline:
            break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "Traceback" not in err
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]


@pytest.mark.slow
def test_run_exits_1_and_lists_the_failed_experiments(tmp_path, monkeypatch, capsys):
    import types

    from kvreport.runner import cli
    from kvreport.runner.measure import experiments as ex
    from kvreport.runner.measure.experiments import Experiment, Result, Skip

    def module(name, fn):
        return types.SimpleNamespace(NAME=name, GROUP="allocator", ORDER=0, TABLES=(), run=fn)

    def boom(ctx):
        raise ZeroDivisionError("the measurement divided by zero")

    def skip(ctx):
        raise Skip("needs a GPU")

    fakes = [Experiment("fine", "allocator", 1, module("fine", lambda ctx: Result({}, ["fine ran"]))),
             Experiment("broken", "allocator", 2, module("broken", boom)),
             Experiment("skipping", "allocator", 3, module("skipping", skip))]
    monkeypatch.setattr(ex, "registry", lambda: fakes)
    db = tmp_path / "k.duckdb"
    with pytest.raises(SystemExit) as code:
        cli.main(["run", "--model", "tiny-gpt2", "--device", "cpu", "--quick", "--groups", "allocator", "--db", str(db)])
    assert code.value.code == 1
    out = capsys.readouterr().out
    assert "FAILED: 1 of 3 experiments" in out
    assert "  - broken: ZeroDivisionError: the measurement divided by zero" in out
    assert "skipping" not in out.split("FAILED: 1 of 3")[1]  # a skip is not a failure

    monkeypatch.setattr(ex, "registry", lambda: [fakes[0], fakes[2]])
    # --groups' old name still works (hidden), and says what it now is
    cli.main(["run", "--model", "tiny-gpt2", "--device", "cpu", "--quick", "--iterations", "1", "--db", str(db)])
    said = capsys.readouterr()
    assert "FAILED" not in said.out  # returned normally: exit status 0
    assert "[1/2] fine\n" in said.out and "--iterations is deprecated: this is --groups allocator" in said.err


def test_findings_prints_the_memory_headline(quick_run):
    _, db, _ = quick_run
    r = kvreport("findings", "--db", str(db))
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if "B/token" in ln)
    assert "1,024" in line and "tiny-gpt2" in line


def test_findings_marks_demonstrations_apart_from_findings(tmp_path):
    import shutil

    db = tmp_path / "k.duckdb"
    shutil.copyfile(Path(__file__).parent / "fixtures" / "site" / "kvreport.duckdb", db)
    r = kvreport("findings", "--db", str(db), "--run", "1")
    assert r.returncode == 0, r.stderr
    leak = next(ln for ln in r.stdout.splitlines() if "KV leaked" in ln)
    assert "[demonstration: generated demo traffic" in leak
    memory = next(ln for ln in r.stdout.splitlines() if "the formula matches" in ln)
    assert "demonstration" not in memory


@pytest.mark.slow
def test_findings_print_what_every_page_opens_with(built_site, fixture_db, tmp_path):
    """`kvreport findings` and the pages read one headline source (analysis/headlines.py, and the claims ledger's
    and the comparison's own answers): the sentence each page opens with is printed, word for word."""
    import html
    import re
    import shutil

    db = tmp_path / "k.duckdb"
    shutil.copyfile(fixture_db, db)
    r = kvreport("findings", "--db", str(db))
    assert r.returncode == 0, r.stderr
    printed = " ".join(r.stdout.split())
    opened = {}
    for page in sorted(built_site.glob("*.html")):
        if page.name == "data.html":
            continue  # it opens with an inventory of the files, not a finding
        for cell in re.findall(r'<p class="finding">(.*?)</p>', page.read_text(encoding="utf-8"), re.S):
            cell = re.sub(r'<span class="muted">run \d+:</span> |<span class="tag">demonstration</span>', "", cell)
            opened.setdefault(page.name, []).append(" ".join(html.unescape(re.sub(r"<[^>]+>", "", cell)).split()))
    assert {"claims.html", "compare.html", "memory.html"} <= set(opened)
    missing = {name: [t for t in texts if t not in printed] for name, texts in opened.items()}
    assert not any(missing.values()), missing


def test_main_leaves_no_process_state_behind(tmp_path, monkeypatch):
    """main() may run many times in one process (tests, a program embedding kvreport): it registers no command
    again, and the SIGTERM handler it installs while a command runs is gone afterwards, so a test runner's own
    stop is not turned into a KeyboardInterrupt."""
    import signal

    from conftest import run_cli

    from kvreport.runner import cli

    def ours(signum, frame):
        raise AssertionError("never called")

    during = []
    real = type(cli.app).__call__

    def spy(app, *args, **kwargs):  # the SIGTERM handler while the command runs
        during.append(signal.getsignal(signal.SIGTERM))
        return real(app, *args, **kwargs)

    monkeypatch.setattr(type(cli.app), "__call__", spy)
    before = signal.signal(signal.SIGTERM, ours)
    try:
        commands = [c.name for c in cli.app.registered_commands]
        assert len(commands) == len(set(commands)) == 9
        for _ in range(2):
            assert run_cli("findings", "--db", tmp_path / "missing.duckdb") != 0
            assert signal.getsignal(signal.SIGTERM) is ours
        assert [c.name for c in cli.app.registered_commands] == commands
        assert len(during) == 2 and all(callable(h) and h is not ours for h in during)
    finally:
        signal.signal(signal.SIGTERM, before)


def test_the_command_line_is_stored_shell_quoted(monkeypatch):
    import shlex
    import sys as _sys

    import torch

    from kvreport.runner.measure.environment import collect

    monkeypatch.setattr(_sys, "argv", ["kvreport", "run", "--label", "reference: CPU, 2 cores"])
    line = collect(torch.device("cpu"))["command_line"]
    assert shlex.split(line) == ["kvreport", "run", "--label", "reference: CPU, 2 cores"]


def test_findings_label_a_standalone_audit_as_an_audit(tmp_path):
    """A standalone audit's headline belongs to no run: it is labelled "audit", not "all runs"."""
    from conftest import quiet_audit

    db = tmp_path / "a.duckdb"
    log = tmp_path / "s.jsonl"
    log.write_text('{"session_id": "a", "timestamp": "2025-06-02T00:00:00Z", "request": {"model": "gpt-4o"}, '
                   '"response": {"object": "chat.completion", "model": "gpt-4o", "usage": {"prompt_tokens": 10, '
                   '"completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 0}}}}\n'
                   '{"session_id": "b", "timestamp": "2025-06-02T01:00:00Z", "request": {"model": "gpt-4o"}, '
                   '"response": {"object": "chat.completion", "model": "gpt-4o", "usage": {"prompt_tokens": 10, '
                   '"completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 0}}}}\n')
    quiet_audit([log], db=db)
    r = kvreport("findings", "--db", str(db))
    assert r.returncode == 0, r.stderr
    audit_lines = [line for line in r.stdout.splitlines() if "Traffic audit of" in line]
    assert audit_lines and all(line.startswith("audit ") for line in audit_lines)


def test_a_command_loads_only_its_own_module():
    """`kvreport audit --help` builds the audit command alone: no model facts, engine, replay, DuckDB or
    importlib.metadata (each costs start-up more than the help itself); the root help lists every command."""
    code = ("import sys; from kvreport.runner.cli import main\n"
            "try:\n    main(['audit', '--help'])\nexcept SystemExit as e:\n    assert not e.code\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('duckdb', 'torch', 'importlib.metadata')\n"
            "               or m.startswith(('kvreport.runner.core.model_facts', 'kvreport.runner.core.engine',\n"
            "                                'kvreport.runner.replay', 'kvreport.runner.commands.models',\n"
            "                                'kvreport.runner.audit.api')))\n"
            "assert not heavy, heavy\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "--idle-timeout" in r.stdout

    from kvreport.runner import cli

    listed = [c.name for c in cli.app.registered_commands]
    assert listed == list(cli.COMMANDS)
