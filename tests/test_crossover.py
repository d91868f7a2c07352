"""Where the KV cache outgrows the weights: the seed's GPT-2 figure, GQA, sliding windows, and the run
on the loaded model."""
from __future__ import annotations

import math

import pytest
import torch

from kvreport.runner.measure.experiments import crossover as crossover

from measure_helpers import make_ctx


def test_gpt2_crossover_is_the_seeds_6751():
    rows = {r["batch_size"]: r for r in crossover.formula_rows("gpt2")}
    one = rows[1]
    assert one["weight_bytes"] == 124_439_808 * 2 and one["kv_bytes_per_token"] == 36_864
    assert math.floor(one["crossover_tokens"]) == 6751 and one["min_tokens_kv_exceeds"] == 6752
    assert one["exceeds_max_positions"] is True  # past GPT-2's 1,024-token context
    for b, r in rows.items():  # per request, it falls as 1/batch
        assert r["crossover_tokens"] * b == pytest.approx(one["crossover_tokens"])
    assert 16 * 512 > one["crossover_tokens"] > 13 * 512  # "KV > model at 16 x 512", but from 14 already


def test_gqa_needs_four_times_the_tokens():
    mha = {r["batch_size"]: r for r in crossover.formula_rows("llama-2-7b")}
    gqa = {r["batch_size"]: r for r in crossover.formula_rows("llama-3.1-8b")}
    assert mha[1]["kv_bytes_per_token"] == 512 * 1024 == 4 * gqa[1]["kv_bytes_per_token"]
    ratio = gqa[1]["crossover_tokens"] / mha[1]["crossover_tokens"]
    assert ratio == pytest.approx(4 * gqa[1]["weight_bytes"] / mha[1]["weight_bytes"])
    assert 25_000 < mha[1]["crossover_tokens"] < 26_000  # not "~388 x batch"
    assert mha[64]["crossover_tokens"] < mha[1]["crossover_tokens"]


def test_sliding_window_caps_the_crossover():
    rows = {r["batch_size"]: r for r in crossover.formula_rows("mistral-7b")}
    assert rows[1]["crossover_tokens"] is None and rows[1]["min_tokens_kv_exceeds"] is None
    assert rows[64]["crossover_tokens"] is not None and rows[64]["crossover_tokens"] < 4096
    first = min(b for b, r in rows.items() if r["crossover_tokens"] is not None)
    # a full window (4,095 tokens) per request must reach the weights at that batch and not the one below
    per_request = 4095 * rows[1]["kv_bytes_per_token"]
    assert first * per_request >= rows[1]["weight_bytes"] > (first // 2) * per_request


def test_crossover_min_tokens_brackets_the_weights():
    from kvreport.runner.core.kv_formula import kv_shape
    from kvreport.runner.measure.models import builtin_config

    shape = kv_shape(builtin_config("gpt2"))
    exact, first = crossover.crossover(shape, 2 * 12 * 64 * 2, 1_000_000, batch=3)
    assert first == math.ceil(1_000_000 / (3 * 36_864)) and exact == pytest.approx(1_000_000 / (3 * 36_864))


def test_crossover_run_measures_the_loaded_model(tiny):
    with torch.inference_mode():
        result = crossover.run(make_ctx(tiny))
    rows = result.tables["crossover"]
    measured = [r for r in rows if r["source"] == "measured"]
    assert {r["model"] for r in measured} == {"tiny-gpt2"} and len(measured) == 7
    assert measured[0]["kv_bytes_per_token"] == 1024 and measured[0]["weight_bytes"] == tiny.weight_bytes()
    from kvreport.runner.measure.models import builtin_names

    # every built-in (the catalogue's published configs and the hand-copied ones), on its model_facts curve
    assert {r["model"] for r in rows if r["source"] == "formula"} == set(builtin_names())
