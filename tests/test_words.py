"""runner/core/words.py: each enum member is its word wherever it goes (str, format, JSON, a bound DuckDB value,
a dict key), so the stored values are the strings they always were."""
from __future__ import annotations

import json

import duckdb
import pytest

from kvreport.runner.core.model_facts import KINDS
from kvreport.runner.core.words import CacheKind, Change, Verdict


@pytest.mark.parametrize("member", [*Verdict, *Change, *CacheKind], ids=str)
def test_a_member_is_its_word(member):
    word = member.value
    assert str(member) == f"{member}" == f"{member:>1}".strip() == word
    assert json.dumps(member) == json.dumps(word)
    assert {word: 1}.get(member) == 1 and member == word
    assert duckdb.execute("SELECT $w", {"w": member}).fetchone()[0] == word


def test_the_stored_words_are_unchanged():
    assert Verdict.GPU_PENDING == "not yet measured on a GPU" and Change.WITHIN_NOISE == "within noise"
    assert KINDS == ("full", "sliding", "chunked", "mla_latent", "mla_per_head", "linear_state", "mamba_state",
                     "conv_state", "rwkv_state", "none")
    # the model facts keep their own tuple (they import nothing of kvreport but errors): the same words
    assert KINDS == tuple(k.value for k in CacheKind)
