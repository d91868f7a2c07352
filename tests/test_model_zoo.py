"""Every built-in model's cache measured from its published config alone, on a KV-faithful replica.

For each catalogue model runner/core/model_facts.py describes: a replica is built (MLP/expert widths, expert count
and vocab shrunk, hidden width where the cache does not depend on it, one layer per cache kind), prefilled
at lengths below, at and above every window and chunk, batch 1 and 2, float32 and bfloat16, and every
layer's measured bytes (K, V and states) must equal the facts' bytes for that layer, exactly.
"""
from __future__ import annotations

import json

import pytest
import torch

from kvreport.runner.core import model_facts
from kvreport.runner.measure.experiments.cache_tensors import measure_layers
from kvreport.runner.measure.models import ModelError, catalogue_names, load_model, resolve
from conftest import cli_process

CPU = torch.device("cpu")
BUDGET = 48 * 2**20
# Window and chunk edges up to here are prefilled through the replica. Llama 4's 8,192-token chunks are not:
# an 8k-token prefill through 40 heads needs over 10 GB on a CPU; test_model_facts_transformers checks the
# same chunk rule at 8-token chunks.
CAP_LIMIT = 4097


def _facts_or_skip(name):
    try:
        return model_facts.load(name)
    except model_facts.ModelFactsError as exc:
        pytest.skip(f"runner/core/model_facts.py does not describe {name}: {exc}")


def _seqs(facts) -> list[int]:
    seqs = {1, 5}
    for cap in facts.caps:  # cap = window - 1: below (cap), at (cap + 1) and above (cap + 2) the window
        seqs |= {s for s in (cap, cap + 1, cap + 2) if s <= CAP_LIMIT}
    return sorted(seqs)


# Where the installed transformers lays a cache out differently from the release the facts follow (5.24),
# measured here: the test must then fail (strict xfail), so a fix on either side is noticed.
VERSION_DIFFERENCES = {
    ("mimo-v2-flash", "5.17.0"): "transformers 5.17 keeps sliding_window_size - 1 tokens in MiMo's sliding "
                                 "layers; 5.24 (the facts) one more",
}
# Catalogue models transformers cannot run as a replica, measured with transformers 5.25.0 (CPU torch 2.13): the
# test is expected to fail with that error (strict on the release measured, so a fix there is noticed).
REPLICA_MEASURED_ON = "5.25.0"
_QWEN3_VL = ("AutoModelForCausalLM has no class for {cls} (the language model of a Qwen3-VL config): no causal-LM "
             "replica can be built from it")
REPLICA_NOT_BUILT = {
    **{name: (ValueError, _QWEN3_VL.format(cls="Qwen3VLTextConfig"))
       for name in ("qwen3-vl-2b", "qwen3-vl-4b", "qwen3-vl-8b", "qwen3-vl-32b")},
    **{name: (ValueError, _QWEN3_VL.format(cls="Qwen3VLMoeTextConfig"))
       for name in ("qwen3-vl-30b-a3b", "qwen3-vl-235b-a22b")},
    "nemotron-3-ultra-550b-a55b": (RuntimeError, "the published time_step_limit [0.0, 1e308] overflows float32 in "
                                                 "the Mamba-2 scan's torch.clamp(dt, max=dt_limit[1])"),
}
# Architectures whose MLA layout per release the facts pinned (read in deepseek_v3's source); the sparse
# attention ones (deepseek_v32, glm_moe_dsa) cache per-head K/V in 5.17 and the latent in 5.24: measured.
PINNED_MLA = ("deepseek_v3", "deepseek_v2", "kimi_k2")


def _check(loaded, facts, seqs, dtype: str):
    import transformers

    from kvreport.runner.measure.experiments.cache_tensors import _mla_layout

    for batch in (1, 2):
        for seq in seqs:
            layers, _ = measure_layers(loaded, torch.zeros(batch, seq, dtype=torch.long))
            f = facts
            if facts.mla_layouts:  # the installed transformers decides the layout: the measurement says which
                f, layout = _mla_layout(facts, layers, seq, batch, dtype)
                assert layout in facts.mla_layouts, (loaded.name, layout)
                pinned = model_facts.mla_layout_read_for(transformers.__version__)
                if facts.model_type in PINNED_MLA and pinned is not None:
                    assert layout == pinned, (loaded.name, layout, pinned)
            expected = [f.layer_cache_bytes(i, seq, batch, dtype) for i in range(len(f.layers))]
            got = [{"k_bytes": r["k_bytes"], "v_bytes": r["v_bytes"], "state_bytes": r["state_bytes"]}
                   for r in layers]
            want = [{k: e[k] for k in ("k_bytes", "v_bytes", "state_bytes")} for e in expected]
            assert got == want, (loaded.name, dtype, batch, seq)


@pytest.mark.replica
@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in catalogue_names()])
def test_catalogue_replica_matches_facts_per_layer(name, request):
    import transformers

    facts = _facts_or_skip(name)
    known = VERSION_DIFFERENCES.get((name, transformers.__version__))
    if known:
        request.applymarker(pytest.mark.xfail(reason=known, strict=True))
    if name in REPLICA_NOT_BUILT:
        error, why = REPLICA_NOT_BUILT[name]
        request.applymarker(pytest.mark.xfail(reason=f"transformers {REPLICA_MEASURED_ON}: {why}", raises=error,
                                              strict=transformers.__version__ == REPLICA_MEASURED_ON))
    try:
        loaded = load_model(name, CPU, torch.float32, budget_bytes=BUDGET, force_replica="per_kind")
    except ModelError as exc:  # an older transformers (the GPU image's) may not know a 2026 architecture
        if "is not an architecture transformers" not in str(exc):
            raise
        pytest.skip(str(exc))
    assert loaded.is_replica and json.loads(loaded.build_json())["weights"] == "random"
    seqs = _seqs(facts)
    _check(loaded, facts, seqs, "float32")
    loaded.model.to(torch.bfloat16)
    _check(loaded, facts, seqs, "bfloat16")


def test_one_layer_per_kind_equals_the_all_layer_replica():
    """The extrapolation (each layer measured as the built layer of its kind) gives what building every
    layer gives: gpt-oss alternates sliding and full attention."""
    small = load_model("gpt-oss-20b", CPU, torch.float32, budget_bytes=BUDGET, force_replica="per_kind")
    every = load_model("gpt-oss-20b", CPU, torch.float32, budget_bytes=4 * 2**30, force_replica=True)
    assert small.replica["layers_built"] == 2 and every.replica["layers_built"] == 24
    for seq in (127, 129):
        ids = torch.zeros(2, seq, dtype=torch.long)
        a, _ = measure_layers(small, ids)
        b, _ = measure_layers(every, ids)
        assert [r["bytes"] for r in a] == [r["bytes"] for r in b]


@pytest.mark.slow
def test_replica_records_what_was_shrunk_and_keeps_attention_fields():
    loaded = load_model("deepseek-v3", CPU, torch.float32, budget_bytes=BUDGET, force_replica="per_kind")
    shrunk = loaded.replica["shrunk"]
    assert shrunk["n_routed_experts"] == [256, 16] and shrunk["vocab_size"][1] == 512
    assert shrunk["moe_intermediate_size"] == [2048, 16]
    c = loaded.config
    assert (c.kv_lora_rank, c.qk_rope_head_dim, c.num_attention_heads) == (512, 64, 128)
    assert c.num_experts_per_tok <= c.n_routed_experts
    # GPT-2 derives head_dim from the width: the probe keeps it.
    gpt2 = load_model("gpt2-large", CPU, torch.float32, budget_bytes=BUDGET, force_replica="per_kind")
    assert "hidden_size" not in gpt2.replica["shrunk"] and gpt2.config.n_embd == 1280


def _write(path, config):
    path.write_text(json.dumps(config))
    return path


LLAMA_TOY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 256}


def test_model_takes_a_config_file_and_a_config_only_folder(tmp_path):
    file = _write(tmp_path / "my-config.json", LLAMA_TOY)
    folder = tmp_path / "only-config"
    folder.mkdir()
    _write(folder / "config.json", LLAMA_TOY)
    assert resolve(str(file)).origin == "config_file"
    assert resolve(str(folder)).origin == "config_folder"
    for where in (file, folder):
        loaded = load_model(str(where), CPU, torch.float32)
        assert loaded.weights_random and loaded.source == f"config:{where}" and not loaded.is_replica
        layers, _ = measure_layers(loaded, torch.zeros(1, 7, dtype=torch.long))
        assert sum(r["bytes"] for r in layers) == 2 * 2 * 2 * 7 * 16 * 4


def test_unknown_model_type_is_one_clear_error(tmp_path):
    bad = _write(tmp_path / "config.json", {**LLAMA_TOY, "model_type": "not_a_real_arch"})
    with pytest.raises(ModelError, match="model_type 'not_a_real_arch' is not an architecture transformers"):
        load_model(str(bad), CPU, torch.float32)
    notjson = tmp_path / "broken.json"
    notjson.write_text("{")
    with pytest.raises(ModelError, match="broken.json: not valid JSON"):
        resolve(str(notjson))


def test_a_cache_that_stops_growing_never_crosses_its_weights():
    from kvreport.runner.measure.experiments.crossover import facts_rows

    every_layer_sliding = model_facts.facts_from_config({**LLAMA_TOY, "model_type": "mistral", "sliding_window": 8})
    rows = facts_rows("toy", "formula", every_layer_sliding, "bfloat16")
    assert all(r["crossover_tokens"] is None for r in rows)
    assert "stops growing at 8 tokens" in rows[0]["note"]
    growing = facts_rows("toy", "formula", model_facts.facts_from_config(LLAMA_TOY), "bfloat16")
    assert growing[0]["crossover_tokens"] is not None and growing[0]["note"] is None


@pytest.mark.slow
def test_cli_run_on_a_config_only_folder_records_the_build(tmp_path):
    folder = tmp_path / "cfg"
    folder.mkdir()
    raw = json.loads((model_facts.CATALOGUE / "gpt-oss-20b.json").read_text())["config"]
    _write(folder / "config.json", raw)
    db = tmp_path / "r.duckdb"
    env = {"KVREPORT_MODEL_BUDGET_GB": "0.05"}
    import os

    out = cli_process("run", "--model", folder, "--device", "cpu", "--quick", "--only", "cache_tensors,decode_cost",
                      "--db", db, env={**os.environ, **env}, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT seq_len, batch_size, kv_bytes, expected_kv_bytes, match, model_build "
                       "FROM cache_tensors ORDER BY batch_size, seq_len").fetchall()
    assert rows and all(r[4] for r in rows)
    assert {127, 128, 129} <= {r[0] for r in rows}  # below, at and above the 128-token window
    build = json.loads(rows[0][5])
    assert build["layers_built"] == 2 and "intermediate_size" in build["shrunk"]
    kinds = dict(con.execute("SELECT kind, count(*) FROM kv_per_layer WHERE seq_len = 129 AND batch_size = 1 "
                             "GROUP BY kind").fetchall())
    assert kinds == {"sliding": 12, "full": 12}
    skipped = con.execute("SELECT status, reason FROM experiments WHERE experiment = 'decode_cost'").fetchone()
    assert skipped[0] == "skipped" and "replica" in skipped[1]
