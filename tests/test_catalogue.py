"""The model catalogue (runner/core/catalogue/<name>.json): one published config.json per file, kept verbatim,
each with the source it was read from written beside it (issue 24)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "runner" / "core" / "catalogue"
FILES = sorted(CATALOGUE.glob("*.json"))
MODELS = [p for p in FILES if p.name != "mla_layouts.json"]  # the one file that is a measurement, not a model
FAMILIES = {"mha", "gqa", "mqa", "mla", "sliding_global", "chunked", "linear_hybrid", "mamba_hybrid",
            "mamba2_hybrid"}


def test_catalogue_holds_at_least_twenty_models():
    assert len(MODELS) >= 20, [p.name for p in MODELS]


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_entry_is_a_sourced_published_config(path):
    entry = json.loads(path.read_text())
    assert entry["name"] == path.stem
    assert re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", entry["name"]), "names are lowercase-hyphen"
    assert entry["family"] in FAMILIES
    source = entry["source"]
    assert isinstance(source["repo"], str) and "/" in source["repo"]
    assert isinstance(source["file"], str) and source["file"].endswith((".json", ".md"))
    assert source["revision"] is None or re.fullmatch(r"[0-9a-f]{40}", source["revision"])
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", source["retrieved"])
    assert source["via"].strip()
    config = entry["config"]
    assert isinstance(config, dict) and config
    model_type = config.get("model_type") or (config.get("text_config") or {}).get("model_type")
    assert isinstance(model_type, str) and model_type


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_a_copy_names_where_it_was_read_and_how_it_was_checked(path):
    """An entry read from a copy of a Hugging Face config.json kept elsewhere (`source.upstream` names the
    Hugging Face repo; the hub is not reachable here) names the repository, the path and the 40-hex commit it
    was read at. A copy that is not a config.json file of its own (one JSON block in a pasted document) names
    the block (`section`) and says how the paste was checked against another copy (`copy_check`)."""
    entry = json.loads(path.read_text())
    source = entry["source"]
    if "upstream" not in source:  # read from the Hugging Face file page itself (gpt2-large, gpt2-xl)
        assert source["file"] == "config.json" and source["repo"] in entry["hf_repos"]
        return
    assert re.fullmatch(r"[0-9a-f]{40}", source["revision"] or ""), "a copy is pinned to a commit"
    assert source["repo"].count("/") == 1 and source["file"].strip()
    upstream = source["upstream"]
    assert upstream["host"] == "huggingface.co" and upstream["repo"] in entry["hf_repos"]
    if not source["file"].endswith(".json"):
        assert isinstance(source.get("section"), str) and source["section"].strip(), "which block of the file"
        assert isinstance(source.get("copy_check"), str) and len(source["copy_check"]) > 40
        assert source["section"] in source["via"]


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_entry_lists_the_repo_ids_it_covers(path):
    entry = json.loads(path.read_text())
    repos = entry["hf_repos"]
    assert isinstance(repos, list) and repos
    assert all(isinstance(r, str) and re.fullmatch(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+", r) for r in repos)


def test_no_two_entries_claim_one_repo_id():
    owner: dict[str, str] = {}
    for path in MODELS:
        for repo in json.loads(path.read_text())["hf_repos"]:
            assert repo.lower() not in owner, (repo, owner.get(repo.lower()), path.stem)
            owner[repo.lower()] = path.stem


def test_the_catalogue_replaces_the_hand_written_builtins():
    """A name with a catalogue entry is built from the published file: runner/measure/models.py keeps hand-written
    hyperparameters only for the names the catalogue does not carry (one source per name)."""
    from kvreport.runner.measure.models import BUILTIN, builtin_names, catalogue_names, resolve

    names = set(catalogue_names())
    assert names and not names & set(BUILTIN)
    assert names <= set(builtin_names())
    for name in sorted(names)[:3]:
        assert resolve(name).raw == json.loads((CATALOGUE / f"{name}.json").read_text())["config"]


def test_catalogue_json_travels_in_the_wheel():
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "kvreport.runner.core.catalogue" in setuptools["packages"]
    assert "*.json" in setuptools["package-data"]["*"]


def test_mla_layouts_agree_with_their_shapes():
    """Each measured release's layout label follows from its recorded shapes and the tiny config it ran."""
    data = json.loads((CATALOGUE / "mla_layouts.json").read_text())
    tiny = data["tiny_config"]
    heads, rank, rope = tiny["num_attention_heads"], tiny["kv_lora_rank"], tiny["qk_rope_head_dim"]
    measured = {v: r for v, r in data["versions"].items() if "error" not in r}
    assert measured, "no release was measured"
    for version, r in measured.items():
        for layer in r["layers"]:
            key, value = layer["key_shape"], layer["value_shape"]
            assert layer["key_bytes"] == 4 * key[0] * key[1] * key[2] * key[3]  # float32 run
            if layer["layout"] == "latent":
                assert key[1] == 1 and key[-1] in (rank, rank + rope), version
            else:
                assert layer["layout"] == "per_head", version
                assert key[1] == heads and key[-1] == tiny["qk_nope_head_dim"] + rope, version
                assert value[-1] == tiny["v_head_dim"], version


def _readme_section(title: str) -> str:
    text = (CATALOGUE / "README.md").read_text()
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start:] if end < 0 else text[start:end]


def test_readme_lists_every_entry_and_waits_for_none_of_them():
    """The catalogue README's table has one row per entry, and its "Waiting" list names no model the catalogue
    holds (a model added from a new source leaves that list)."""
    names = {p.stem for p in MODELS}
    table = {line.split("|")[1].strip() for line in (CATALOGUE / "README.md").read_text().splitlines()
             if line.startswith("| ") and "retrieved" in line}
    assert table == names
    waiting = _readme_section("## Waiting")
    bullets = [line[2:].split(":")[0] for line in waiting.splitlines() if line.startswith("- ")]
    assert bullets
    waiting_names = {n.strip() for b in bullets for n in re.split(r",| and ", re.sub(r"\([^)]*\)", "", b))}
    assert not waiting_names & names, waiting_names & names
