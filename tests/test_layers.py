"""The packages are the layers: core <- audit <- measure, core <- analysis, the CLI composes them. Every command
but `run` imports no torch (checked on the imports of every module, and by running them), and the CLI follows
Click's conventions for usage errors."""
import ast
import shutil
import sys
from pathlib import Path

import pytest

from conftest import cli_in_process, cli_process as _cli, imported_modules as _imported_modules

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


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
    ["migrate", "{db}"],
    ["merge", "{db}", "--into", "{tmp}/merged.duckdb"],
    ["replay", str(FIXTURES / "traces" / "mooncake_conversation_slice.jsonl"), "--model", "llama-3.1-8b",
     "--db", "{tmp}/replay.duckdb"],
], ids=["build-help", "audit-help", "findings", "export", "build", "audit", "audit-model-path", "models",
        "models-path", "migrate", "merge", "replay"])
@pytest.mark.slow
def test_reading_commands_never_import_torch(args, db, tmp_path):
    args = [a.format(db=db, tmp=tmp_path) for a in args]
    names = _imported_modules(*args, cwd=tmp_path)
    assert "kvreport.runner.cli" in names  # the probe sees our own imports
    heavy = sorted(n for n in names if n.split(".")[0] in ("torch", "transformers"))
    assert not heavy, f"kvreport {' '.join(args[:1])} imported {heavy[:5]}"
    assert not any(n.startswith("kvreport.runner.measure") for n in names)


@pytest.mark.parametrize("option", [["--groups", "cache,7"], ["--only", "cache_tensor"]])
def test_a_bad_run_option_is_refused_before_torch_is_imported(tmp_path, option):
    names = _imported_modules("run", *option, "--db", tmp_path / "k.duckdb", cwd=tmp_path, exit_code=2)
    assert "kvreport.runner.commands.run" in names
    assert not sorted(n for n in names if n.split(".")[0] in ("torch", "transformers"))
    assert not (tmp_path / "k.duckdb").exists()


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


# The layers, as packages. Each may import itself and the layers listed beside it, nothing else of ours:
# core <- audit <- measure, core <- analysis, and the CLI (cli.py, commands/) is the one composition root.
LAYERS = {
    "core": ("kvreport.runner.core", {"core"}),
    "audit": ("kvreport.runner.audit", {"core", "audit"}),
    "analysis": ("kvreport.analysis", {"core", "analysis"}),
    "replay": ("kvreport.runner.replay", {"core", "replay"}),
    # The audit demo experiment audits generated logs through the audit itself.
    "measure": ("kvreport.runner.measure", {"core", "audit", "measure"}),
    "cli": ("kvreport.runner.commands", {"core", "audit", "analysis", "replay", "measure", "cli"}),
}
HEAVY = ("torch", "transformers", "triton", "numpy", "nvidia_ml_py", "pynvml")
# Third-party packages each torch-free layer may import (beyond the standard library).
THIRD_PARTY = {
    "core": {"duckdb"},
    "audit": {"duckdb", "tokenizers", "genai_prices", "ray", "pyarrow", "s3fs", "fsspec", "zstandard"},
    "analysis": {"duckdb", "jinja2", "plotly", "markupsafe"},
    "replay": {"duckdb"},
}


def _layer_of_module(name: str) -> str | None:
    if name == "kvreport.runner":
        return "root"  # the package itself: __version__ and nothing else (checked below)
    if name in ("kvreport.runner.cli", "kvreport.runner.__main__"):
        return "cli"
    for layer, (prefix, _) in LAYERS.items():
        if name == prefix or name.startswith(prefix + "."):
            return layer
    return None


def _layer_files():
    for path in sorted(list((ROOT / "runner").rglob("*.py")) + list((ROOT / "analysis").rglob("*.py"))):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts[:-1]) if rel.name == "__init__" else list(rel.parts)
        yield path, _layer_of_module("kvreport." + ".".join(parts))


def test_every_module_belongs_to_a_layer():
    loose = [str(p.relative_to(ROOT)) for p, layer in _layer_files() if layer is None]
    assert not loose, f"modules outside every layer package: {loose}"


def test_imports_follow_the_layers():
    """Every import in every module, at the top or inside a function, points down the layers."""
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    for path, layer in _layer_files():
        if layer == "root":
            assert not {m for m in _imports_of(path) if m.startswith("kvreport")}, "runner/__init__.py: the version only"
            continue
        allowed = LAYERS[layer][1] | {"root"}
        for mod in _imports_of(path):
            if mod.startswith("kvreport"):
                target = _layer_of_module(mod)
                assert target in allowed, (f"{path.relative_to(ROOT)} ({layer}) imports {mod} ({target}); "
                                           f"{layer} may import only {sorted(allowed)}")
            elif layer in THIRD_PARTY:
                top = mod.split(".")[0]
                assert top in stdlib or top in THIRD_PARTY[layer], \
                    f"{path.relative_to(ROOT)} ({layer}) imports {mod}; {layer} may use {sorted(THIRD_PARTY[layer])}"


def test_only_the_run_command_reaches_the_measuring_code():
    """The commands are the composition root; only `run` may reach torch (through kvreport.runner.measure)."""
    for path in sorted((ROOT / "runner" / "commands").glob("*.py")):
        if path.name == "run.py":
            continue
        reached = {m for m in _imports_of(path) if _layer_of_module(m) == "measure" or m.split(".")[0] in HEAVY}
        assert not reached, f"{path.relative_to(ROOT)} imports {sorted(reached)}: only `run` may measure"
    cli = _imports_of(ROOT / "runner" / "cli.py")
    assert not {m for m in cli if _layer_of_module(m) == "measure" or m.split(".")[0] in HEAVY}


def test_the_layer_check_sees_a_forbidden_import(tmp_path, monkeypatch):
    """Guard of the guard: an import of the measuring code added to the core is reported."""
    bad = ROOT / "runner" / "core" / "errors.py"
    original = bad.read_text(encoding="utf-8")
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: original + "\nfrom ..measure import probes\n"
                        if self == bad else Path.read_bytes(self).decode(encoding or "utf-8"))
    with pytest.raises(AssertionError, match="core.*may import only"):
        test_imports_follow_the_layers()


def test_model_facts_imports_only_the_standard_library():
    package = ROOT / "runner" / "core" / "model_facts"
    mods = set().union(*(_imports_of(p) for p in package.rglob("*.py")))
    ours = {m for m in mods if m.startswith("kvreport")}
    outside = {m for m in ours if not m.startswith("kvreport.runner.core.model_facts")}
    assert outside <= {"kvreport.runner.core.errors", "kvreport.runner.core.builtin_configs"}, outside
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    assert {m.split(".")[0] for m in mods - ours} <= stdlib, mods - ours


def test_experiments_do_not_import_each_other():
    folder = ROOT / "runner" / "measure" / "experiments"
    names = {p.stem for p in folder.glob("*.py") if not p.name.startswith("_")}
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        others = {m.rsplit(".", 1)[-1] for m in _imports_of(path) if m.startswith("kvreport.runner.measure.experiments.")}
        assert not (others & names) - {path.stem}, f"{path.name} imports experiment(s) {sorted(others & names)}"


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
    r = cli_in_process("run", "--only", "cache_tensors,nope", "--db", str(tmp_path / "k.duckdb"))
    assert r.returncode == 2 and "nope" in r.stderr and "cache_tensors" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "k.duckdb").exists()


def test_findings_for_a_missing_run_and_build_into_a_file_are_errors(db, tmp_path):
    r = _cli("findings", "--db", str(db), "--run", "999")
    assert r.returncode == 2 and "no run 999" in r.stderr
    target = tmp_path / "afile"
    target.write_text("x")
    r = _cli("build", "--db", str(db), "--out", str(target))
    assert r.returncode == 2 and "is a file" in r.stderr and target.read_text() == "x"


def test_the_audit_without_ray_never_imports_ray(tmp_path):
    """Ray and s3fs are optional extras (`kvreport[ray]`, `kvreport[s3]`): only `kvreport audit --ray` imports
    Ray, and only an s3:// path s3fs."""
    names = _imported_modules("audit", str(FIXTURES / "audit" / "openai.jsonl"), "--db", str(tmp_path / "a.duckdb"),
                              cwd=tmp_path)
    assert "kvreport.runner.audit.engine" in names  # the probe saw the audit run
    assert not sorted(n for n in names if n.split(".")[0] in ("ray", "s3fs", "botocore", "aiobotocore")
                      or n.endswith("audit.distributed"))
