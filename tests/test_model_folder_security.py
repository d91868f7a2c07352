"""A model folder is data, never code: no repository code runs whatever is on standard input, weights come from
safetensors only, an index cannot point outside the folder, and a checkpoint above the build budget is not
loaded whole."""
import json

import pytest

from conftest import cli_process

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from kvreport.runner.measure import models  # noqa: E402

TINY = dict(model_type="llama", hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=64)
CPU = torch.device("cpu")


def _checkpoint(folder, **extra):
    transformers.logging.set_verbosity_error()
    config = transformers.AutoConfig.for_model(**TINY)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    if extra:
        raw = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**raw, **extra}))
    return folder


def _remote_code_folder(tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    marker = tmp_path / "ran.txt"
    code = f"open({str(marker)!r}, 'w').write('ran')\nfrom transformers import LlamaConfig as EvilConfig\n"
    (folder / "configuration_evil.py").write_text(code)
    (folder / "modeling_evil.py").write_text(code)
    (folder / "config.json").write_text(json.dumps({**TINY, "auto_map": {
        "AutoConfig": "configuration_evil.EvilConfig", "AutoModelForCausalLM": "modeling_evil.EvilModel"}}))
    return folder, marker


@pytest.mark.parametrize("weights", [False, True])
def test_a_folder_naming_its_own_code_is_refused_by_name(tmp_path, weights):
    folder, marker = _remote_code_folder(tmp_path)
    if weights:
        (folder / "model.safetensors").write_bytes(b"")
    with pytest.raises(models.ModelError, match="'auto_map' names the model's own Python code"):
        models.resolve(str(folder))
    assert not marker.exists()


@pytest.mark.slow
def test_run_never_runs_folder_code_even_with_yes_on_stdin(tmp_path):
    folder, marker = _remote_code_folder(tmp_path)
    out = cli_process("run", "--model", folder, "--quick", "--only", "cache_tensors", "--db", tmp_path / "r.duckdb",
                      input="y\n" * 20)
    assert out.returncode == 2 and "auto_map" in out.stderr and not marker.exists(), out.stderr[-2000:]


class _Spy:
    """Records the keyword arguments of every from_pretrained call, then calls the real one."""
    def __init__(self, monkeypatch):
        self.calls = []
        for owner in (models.AutoConfig, models.AutoModelForCausalLM):
            real = owner.from_pretrained
            monkeypatch.setattr(owner, "from_pretrained", self._wrap(real))

    def _wrap(self, real):
        def call(*args, **kwargs):
            self.calls.append(kwargs)
            return real(*args, **kwargs)
        return call


def test_every_transformers_load_passes_trust_remote_code_false(tmp_path, monkeypatch):
    folder = _checkpoint(tmp_path / "ckpt")
    spy = _Spy(monkeypatch)
    loaded = models.load_model(str(folder), CPU, torch.float32, budget_bytes=2**30)
    assert not loaded.weights_random and len(spy.calls) >= 2
    assert all(c.get("trust_remote_code") is False and c.get("local_files_only") for c in spy.calls), spy.calls
    assert all(c.get("use_safetensors") for c in spy.calls if "dtype" in c or "torch_dtype" in c), spy.calls


def test_pickle_only_weights_are_refused(tmp_path):
    folder = tmp_path / "pickled"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY))
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(models.ModelError, match="weights only as pytorch_model.bin .*safetensors only"):
        models.resolve(str(folder))


@pytest.mark.parametrize("shard", ["../outside.safetensors", "/etc/passwd", "sub/../../x.safetensors"])
def test_an_index_naming_shards_outside_the_folder_is_refused(tmp_path, shard):
    folder = tmp_path / "indexed"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY))
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"a": "model-00001.safetensors", "b": shard}}))
    with pytest.raises(models.ModelError, match="lies outside the model folder"):
        models.resolve(str(folder))


def test_an_index_inside_the_folder_is_accepted(tmp_path):
    folder = tmp_path / "indexed"
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(TINY))
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"a": "model-00001.safetensors", "b": "sub/model-00002.safetensors"}}))
    assert models.resolve(str(folder)).origin == "checkpoint"


def test_a_checkpoint_above_the_budget_is_not_loaded_whole(tmp_path, monkeypatch):
    folder = _checkpoint(tmp_path / "ckpt")
    spy = _Spy(monkeypatch)
    whole = models.meta_parameter_count(transformers.AutoConfig.for_model(**TINY)) * 4
    loaded = models.load_model(str(folder), CPU, torch.float32, budget_bytes=whole - 1)
    assert loaded.weights_random and loaded.is_replica
    assert any("exceed the build budget" in n for n in loaded.replica["notes"])
    assert not [c for c in spy.calls if "dtype" in c or "torch_dtype" in c]  # no weights were read


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0", "١٢", "1e999", "8 GB"])
def test_the_budget_variable_takes_plain_positive_numbers_only(monkeypatch, value):
    monkeypatch.setenv("KVREPORT_MODEL_BUDGET_GB", value)
    with pytest.raises(models.ModelError, match="KVREPORT_MODEL_BUDGET_GB"):
        models.model_budget_bytes(CPU)


def test_the_budget_variable_reads_gib(monkeypatch):
    monkeypatch.setenv("KVREPORT_MODEL_BUDGET_GB", "0.5")
    assert models.model_budget_bytes(CPU) == 2**29


def test_a_config_saved_with_infinities_is_read_as_transformers_reads_it(tmp_path):
    """transformers 5.24 saves Mamba-2's time_step_limit (0, inf) as {"__float__": "Infinity"}."""
    transformers.logging.set_verbosity_error()
    transformers.AutoConfig.for_model("mamba2", hidden_size=32, num_hidden_layers=2, vocab_size=64, num_heads=4,
                                      head_dim=16, n_groups=1, state_size=8).save_pretrained(tmp_path / "m")
    assert "__float__" in (tmp_path / "m" / "config.json").read_text()
    config, _, _ = models.load_config(str(tmp_path / "m"))
    assert config.time_step_limit[1] == float("inf")
