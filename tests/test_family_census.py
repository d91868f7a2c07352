"""The family census under the installed transformers (tests/family_census.py): every model_type with a
causal-LM class is built tiny, prefilled below and above its windows, and its cache must match the model facts
exactly, or the family must be listed for this transformers release in tests/family_census_exceptions.json
with the status it has and the reason. A listed family that is exact now fails too, so the list only shrinks;
a release that adds a family or changes a layout fails here, not for a user."""
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from packaging.version import Version  # noqa: E402

import family_census  # noqa: E402

EXCEPTIONS = Path(__file__).with_name("family_census_exceptions.json")


def expected_exceptions(version: str) -> dict[str, tuple[str, str]]:
    """{model_type: (status, reason)} for the newest release listed at or below `version`."""
    listed = json.loads(EXCEPTIONS.read_text())
    releases = sorted({r for e in listed.values() for r in e["status"]}, key=Version)
    usable = [r for r in releases if Version(r) <= Version(Version(version).base_version)]
    if not usable:
        pytest.fail(f"{EXCEPTIONS.name} lists no release at or below transformers {version}")
    release = usable[-1]
    return {t: (e["status"][release], e["reason"]) for t, e in listed.items() if release in e["status"]}


def census_differences(results: dict, exceptions: dict) -> list[str]:
    out = []
    for model_type, (status, detail, _) in sorted(results.items()):
        listed = exceptions.get(model_type)
        if status == "exact" and listed:
            out.append(f"{model_type}: exact now, but listed as {listed[0]} ({listed[1]}): remove it")
        elif status != "exact" and (not listed or listed[0] != status):
            out.append(f"{model_type}: {status}: {detail}" + (f" (listed as {listed[0]})" if listed else ""))
    return out


def test_exceptions_file_names_a_status_and_a_reason():
    listed = json.loads(EXCEPTIONS.read_text())
    for model_type, entry in listed.items():
        assert entry["reason"].strip(), model_type
        assert entry["status"] and set(entry["status"].values()) <= set(family_census.STATUSES[1:]), model_type


def test_a_wrong_family_is_reported_and_a_listed_exact_one_too():
    results = {"a": ("wrong", "seq 5: cache holds 1 B, facts say 2 B", "full"), "b": ("exact", "generic", "full"),
               "c": ("no_cache", "no cache", "")}
    diffs = census_differences(results, {"b": ("refused", "old"), "c": ("no_cache", "none at all")})
    assert diffs == ["a: wrong: seq 5: cache holds 1 B, facts say 2 B", "b: exact now, but listed as refused (old): "
                     "remove it"]


@pytest.mark.slow
def test_every_causal_lm_family_is_exact_or_listed():
    records = family_census.measure_all(workers=2, timeout_s=120)
    results = {t: family_census.compare(r) for t, r in records.items()}
    exceptions = expected_exceptions(transformers.__version__)
    diffs = census_differences(results, exceptions)
    assert not diffs, (f"transformers {transformers.__version__}:\n" + "\n".join(diffs) + "\n" +
                       family_census.table(results))
