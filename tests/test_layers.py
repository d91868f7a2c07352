"""Layers point one way: runner -> store <- analysis. Reading commands (build, findings, export, audit,
migrate, merge, models) never import torch, and the CLI follows Click's conventions for usage errors."""
import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def _imported_modules(*args, cwd) -> set[str]:
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "kvreport.runner", *args], capture_output=True,
                       text=True, cwd=cwd, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    names = set()
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, "no -X importtime output"
    return names


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("layers") / "kvreport.duckdb"
    shutil.copyfile(FIXTURES / "site" / "kvreport.duckdb", path)
    return path


@pytest.mark.parametrize("args", [
    ["build", "--help"],
    ["audit", "--help"],
    ["findings", "--db", "{db}"],
    ["export", "--db", "{db}", "--out", "{tmp}/export"],
    ["build", "--db", "{db}", "--out", "{tmp}/site"],
    ["audit", str(FIXTURES / "audit" / "openai.jsonl"), "--db", "{tmp}/audit.duckdb"],
    ["audit", str(FIXTURES / "audit" / "openai.jsonl"), "--db", "{tmp}/audit.duckdb",
     "--model", str(FIXTURES / "models" / "gemma-like-tiny" / "config.json")],
    ["models", "--json"],
    ["models", str(FIXTURES / "models" / "gemma-like-tiny"), "--seq", "1024,65536"],
], ids=["build-help", "audit-help", "findings", "export", "build", "audit", "audit-model-path", "models",
        "models-path"])
def test_reading_commands_never_import_torch(args, db, tmp_path):
    args = [a.format(db=db, tmp=tmp_path) for a in args]
    names = _imported_modules(*args, cwd=tmp_path)
    assert "kvreport.runner.cli" in names  # the probe sees our own imports
    heavy = sorted(n for n in names if n.split(".")[0] in ("torch", "transformers"))
    assert not heavy, f"kvreport {' '.join(args[:1])} imported {heavy[:5]}"
    assert not any(n.startswith("kvreport.runner.experiments") for n in names)


def _imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    pkg = "kvreport." + ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                out.add(".".join(base + ([node.module] if node.module else [])))
            else:
                out.add(node.module or "")
    return out


def test_analysis_reads_only_through_the_store():
    # model_facts is config arithmetic in the standard library only (checked below): the Models page reads it
    allowed = {"kvreport.runner.store", "kvreport.runner.errors", "kvreport.runner.model_facts"}
    for path in sorted((ROOT / "analysis").rglob("*.py")):
        bad = {m for m in _imports_of(path) if m.startswith("kvreport.runner") and m not in allowed}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}; analysis may use only {sorted(allowed)}"


def test_model_facts_imports_only_the_standard_library():
    mods = _imports_of(ROOT / "runner" / "model_facts.py")
    ours = {m for m in mods if m.startswith("kvreport")}
    assert ours <= {"kvreport.runner.errors", "kvreport.runner.models"}, ours  # models: the legacy dicts, lazily
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    assert {m.split(".")[0] for m in mods - ours} <= stdlib, mods - ours


def test_the_store_imports_no_experiment_and_no_torch():
    mods = _imports_of(ROOT / "runner" / "store.py")
    assert not {m for m in mods if "experiments" in m or m.split(".")[0] in ("torch", "transformers")}


def test_experiments_do_not_import_each_other():
    folder = ROOT / "runner" / "experiments"
    names = {p.stem for p in folder.glob("*.py") if not p.name.startswith("_")}
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        others = {m.rsplit(".", 1)[-1] for m in _imports_of(path) if m.startswith("kvreport.runner.experiments.")}
        assert not (others & names) - {path.stem}, f"{path.name} imports experiment(s) {sorted(others & names)}"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "kvreport.runner", *args], capture_output=True, text=True,
                          timeout=300)


def test_usage_errors_exit_2_with_clicks_usage_message():
    r = _cli("bogus")
    assert r.returncode == 2 and "Usage: kvreport" in r.stderr and "No such command 'bogus'" in r.stderr
    r = _cli("audit")
    assert r.returncode == 2 and "Usage: kvreport audit" in r.stderr and "internal error" not in r.stderr


def test_version_and_flag_help():
    from kvreport.runner import __version__

    r = _cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"kvreport {__version__}"
    r = _cli("run", "--help")
    assert r.returncode == 0 and "--quick" in r.stdout and "<bool>" not in r.stdout


def test_only_with_an_unknown_experiment_lists_the_valid_names(tmp_path):
    r = _cli("run", "--only", "kv_memory_v2,nope", "--db", str(tmp_path / "k.duckdb"))
    assert r.returncode == 2 and "nope" in r.stderr and "kv_memory_v2" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "k.duckdb").exists()


def test_findings_for_a_missing_run_and_build_into_a_file_are_errors(db, tmp_path):
    r = _cli("findings", "--db", str(db), "--run", "999")
    assert r.returncode == 2 and "no run 999" in r.stderr
    target = tmp_path / "afile"
    target.write_text("x")
    r = _cli("build", "--db", str(db), "--out", str(target))
    assert r.returncode == 2 and "is a file" in r.stderr and target.read_text() == "x"
