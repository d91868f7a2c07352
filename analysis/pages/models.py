"""Models: what the KV cache costs for each built-in model, from its published config alone (runner/core/model_facts.py,
analytic), with the measured cache sizes of the DB's runs beside it (cache_tensors, and the transformers version
that measured them)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvreport.analysis.site import PageSpec, Table
import kvreport.runner.core.model_facts as mf
from kvreport.runner.core import engine

PAGE = PageSpec(slug="models", title="Models", order=5)
SEQS = (4096, 32768, 131072)
ANSWER_SEQ = 131072
FITS_SEQ = 32768
FITS_COLUMNS = ((24, 1), (80, 1), (141, 1), (192, 1), (80, 8), (141, 8))  # (GPU GB, TP)
DTYPES = ("bfloat16", "float32")
ENGINE_COLUMNS = (("rtx3090", 1), ("h100", 1), ("h200", 1), ("h100", 8), ("h200", 8))  # (GPU, TP)
KIND_LABELS = {"mla_latent": "MLA", "mla_per_head": "MLA per head", "linear_state": "linear", "mamba_state": "Mamba",
               "none": "no cache"}


def _kinds(facts) -> str:
    counts: dict[str, int] = {}
    for g in facts.groups():
        counts[g["kind"]] = counts.get(g["kind"], 0) + g["count"]
    return " + ".join(f"{n} {KIND_LABELS.get(k, k)}" for k, n in counts.items() if k != "none")  # MLP-only: no cache


def cost_rows(models: list, dtype: str) -> list[dict]:
    """One row per model: cache of one request at each length (transformers' layout), the engine view, weights
    and what fits (analytic)."""
    rows = []
    for f in models:
        row = {"model": f.name, "layers": _kinds(f), "weight_bytes": f.weight_bytes(dtype),
               "engine_128k": f.engine_cache_bytes(ANSWER_SEQ, 1, dtype),
               "fits_80_tp1": f.fits(80 * 10**9, FITS_SEQ, 1, dtype),
               "fits_141_tp8": f.fits(141 * 10**9, ANSWER_SEQ, 8, dtype)}
        for seq in SEQS:  # none past the model's context limit: no request gets there
            row[f"kv_{seq}"] = f.cache_bytes(seq, 1, dtype) if _reaches(f, seq) else None
        if not _reaches(f, ANSWER_SEQ):
            row["engine_128k"] = row["fits_141_tp8"] = None
        if not _reaches(f, FITS_SEQ):
            row["fits_80_tp1"] = None
        rows.append(row)
    return sorted(rows, key=lambda r: (r[f"kv_{ANSWER_SEQ}"] is None, -(r[f"kv_{ANSWER_SEQ}"] or 0), r["model"]))


def _reaches(facts, seq: int) -> bool:
    return facts.max_positions is None or seq <= facts.max_positions


def fits_rows(models: list, dtype: str = "bfloat16") -> list[dict]:
    rows = []
    for f in models:
        row = {"model": f.name}
        for gb, tp in FITS_COLUMNS:
            row[f"fits_{gb}_{tp}"] = f.fits(gb * 10**9, FITS_SEQ, tp, dtype) if _reaches(f, FITS_SEQ) else None
        rows.append(row)
    return sorted(rows, key=lambda r: r["model"])


def every_fit(models: list, dtype: str = "bfloat16") -> list[dict]:
    return [{"model": f.name, **cell} for f in sorted(models, key=lambda f: f.name)
            for cell in f.fits_table(SEQS, dtype) if _reaches(f, cell["seq"])]


def kind_rows(models: list, dtype: str = "bfloat16") -> tuple[list[dict], list[str]]:
    """Bytes per cache kind at 128k tokens, and the kinds that occur at all."""
    rows, present = [], set()
    for f in models:
        if not _reaches(f, ANSWER_SEQ):
            continue
        by_kind = f.kind_bytes(ANSWER_SEQ, 1, dtype)
        present |= set(by_kind)
        rows.append({"model": f.name, **by_kind, "total": f.cache_bytes(ANSWER_SEQ, 1, dtype)})
    kinds = [k for k in mf.KINDS if k in present]
    for r in rows:
        for k in kinds:
            r.setdefault(k, None)
    return sorted(rows, key=lambda r: r["model"]), kinds


def mla_rows(models: list, dtype: str = "bfloat16") -> list[dict]:
    rows = []
    for f in models:
        if not f.mla_layouts or not _reaches(f, ANSWER_SEQ):
            continue
        latent = f.with_mla_layout("mla_latent").cache_bytes(ANSWER_SEQ, 1, dtype)
        per_head = f.with_mla_layout("mla_per_head").cache_bytes(ANSWER_SEQ, 1, dtype)
        rows.append({"model": f.name, "latent": latent, "per_head": per_head, "ratio": per_head / latent})
    return rows


def measured_rows(q) -> list[dict]:
    """The DB's cache measurements beside the formula for the same model, length, batch, dtype and, for MLA,
    the layout the measuring transformers release was read to use."""
    out = []
    cache: dict[str, Any] = {}
    for r in q("models_measured"):
        name = r["model"]
        if name not in cache:
            try:
                cache[name] = mf.load(name)
            except mf.ModelFactsError as exc:
                cache[name] = str(exc)
        facts = cache[name]
        row = {**r, "formula_bytes": None, "match": None, "layout": None}
        if isinstance(facts, str):
            row["layout"] = "no formula: " + facts
        elif r["dtype"] in mf.DTYPE_BYTES:
            if facts.mla_layouts:
                layout = mf.mla_layout_read_for(r["transformers_version"] or "")
                row["layout"] = layout or "MLA layout of this release not read"
                facts = facts.with_mla_layout(layout) if layout else None
            if facts is not None:
                row["formula_bytes"] = facts.cache_bytes(r["seq_len"], r["batch_size"], r["dtype"])
                row["match"] = row["formula_bytes"] == r["kv_bytes"]
        out.append(row)
    return out


def cost_table(dtype: str, rows: list[dict]) -> Table:
    """One request's cache per model at one dtype (cost_rows), largest first."""
    return Table(f"models-cost-{dtype}", rows, [
        ("model", "model", "text"), ("kv_131072", "128k", "bytes"), ("kv_32768", "32k", "bytes"),
        ("kv_4096", "4k", "bytes"), ("engine_128k", "engine 128k", "bytes"), ("weight_bytes", "weights", "bytes"),
        ("fits_80_tp1", "fit 80 GB", "int"), ("fits_141_tp8", "fit 8×141 GB", "int"),
        ("layers", "cache layers", "text")],
        caption=f"KV cache of one request of 128k, 32k and 4k tokens ({dtype}, analytic), largest first; fit 80 GB: "
                "32k-token requests on one 80 GB GPU; fit 8×141 GB: 128k-token requests on eight 141 GB GPUs (TP 8)")


@dataclass
class ModelsPage:
    answer: dict | None
    cost_tables: list[tuple[str, Table]]  # (dtype, its table): one request's cache per model
    fits_table: Table
    every_fit_table: Table
    kinds_table: Table
    mla: list[dict]
    mla_table: Table | None       # the MLA tables, where a catalogue model uses MLA
    mla_versions_table: Table | None
    measured: list[dict]
    measured_table: Table | None  # where a run measured a catalogue model's cache
    unsupported_table: Table | None
    vllm_rules: str
    engine_profile: str
    engine_fits_table: Table
    engine_refusals_table: Table | None


def engine_rows(models: list, profile=engine.DEFAULT_PROFILE) -> tuple[list[dict], list[dict]]:
    """Requests of FITS_SEQ tokens the profile's KV pool holds at once per GPU and TP size (capped at its
    max_num_seqs), and what that release refuses (architecture, TP size), one row per reason."""
    rows: list[dict] = []
    refused: list[dict] = []
    for f in models:
        target, raw = engine.resolve(f.name)
        row = {"model": f.name}
        for gpu, tp in ENGINE_COLUMNS:
            cell = engine.fits(f, raw, profile, engine.gpu_bytes(gpu), [FITS_SEQ], tp, gpu_name=gpu)
            got = cell["requests"].get(str(FITS_SEQ), {})
            row[f"{gpu}_{tp}"] = None if cell["refused"] or "past_context" in got else got["requests"]
            for why in cell["refused"]:
                if not any(r["model"] == f.name and r["reason"] == why for r in refused):
                    refused.append({"model": f.name, "gpu": gpu, "tp": tp, "reason": why})
        rows.append(row)
    return sorted(rows, key=lambda r: r["model"]), refused


def context(q, site) -> ModelsPage:
    models, unsupported = [], []
    for name in mf.builtin_names():
        try:
            models.append(mf.load(name))
        except mf.ModelFactsError as exc:
            reason = str(exc).split("; supported:")[0].removeprefix(f"catalogue model {name}: ")
            unsupported.append({"model": name, "reason": reason})
    costs = {dtype: cost_rows(models, dtype) for dtype in DTYPES}
    bf16 = [r for r in costs["bfloat16"] if r[f"kv_{ANSWER_SEQ}"] is not None]
    answer = None
    if bf16:
        most, least = bf16[0], bf16[-1]
        answer = {"n": len(bf16), "most": most, "least": least, "seq": ANSWER_SEQ,
                  "ratio": most[f"kv_{ANSWER_SEQ}"] / least[f"kv_{ANSWER_SEQ}"] if least[f"kv_{ANSWER_SEQ}"] else None}
    kinds, kind_names = kind_rows(models)
    fits, all_fits, mla, measured = fits_rows(models), every_fit(models), mla_rows(models), measured_rows(q)
    mla_versions = [{"transformers": v, "layout": layout} for v, layout in mf.MLA_LAYOUT_BY_TRANSFORMERS.items()]
    fits_columns_spec = [(f"fits_{gb}_{tp}", f"{gb} GB" if tp == 1 else f"{tp} × {gb} GB", "int")
                         for gb, tp in FITS_COLUMNS]
    kind_columns_spec = [(k, k.replace("_", " "), "bytes") for k in kind_names]
    engine_fits, engine_refused = engine_rows(models)
    return ModelsPage(
        answer=answer, mla=mla, measured=measured, vllm_rules=mf.VLLM_RULES,
        engine_profile=engine.DEFAULT_PROFILE.name,
        engine_fits_table=Table("models-engine-fits", engine_fits, [("model", "model", "text")] + [
            (f"{gpu}_{tp}", f"{gpu}" if tp == 1 else f"{tp} × {gpu}", "int") for gpu, tp in ENGINE_COLUMNS],
            caption=f"Requests of 32,768 tokens {engine.DEFAULT_PROFILE.name} would hold at once (bfloat16 KV cache, "
                    "weights as stored, analytic upper bound)"),
        engine_refusals_table=None if not engine_refused else Table("models-engine-refused", engine_refused, [
            ("model", "model", "text"), ("gpu", "GPU", "text"), ("tp", "TP", "int"),
            ("reason", "refused because", "text")],
            caption=f"Configurations {engine.DEFAULT_PROFILE.name} refuses"),
        cost_tables=[(dtype, cost_table(dtype, rows)) for dtype, rows in costs.items()],
        fits_table=Table("models-fits", fits, [("model", "model", "text")] + fits_columns_spec,
            caption="Requests of 32,768 tokens whose cache fits beside the weights, per GPU "
                    "(bfloat16, engine view, analytic)"),
        every_fit_table=Table("models-fits-all", all_fits, [
            ("model", "model", "text"), ("gpu_gb", "GPU GB", "int"), ("tp", "TP", "int"), ("seq", "tokens", "int"),
            ("requests", "requests that fit", "int")],
            caption="Requests that fit, every combination (bfloat16, analytic)"),
        kinds_table=Table("models-kinds", kinds,
                          [("model", "model", "text"), ("total", "total", "bytes")] + kind_columns_spec,
            caption="KV cache of one 128k-token request by cache kind (bfloat16, transformers' layout, analytic)"),
        mla_table=None if not mla else Table("models-mla", mla, [
            ("model", "model", "text"), ("latent", "latent layout, 128k", "bytes"),
            ("per_head", "per-head layout, 128k", "bytes"), ("ratio", "per-head / latent", "num")],
            caption="One 128k-token request of an MLA model in each transformers layout (bfloat16, analytic)"),
        mla_versions_table=None if not mla else Table("models-mla-versions", mla_versions, [
            ("transformers", "transformers", "text"), ("layout", "MLA cache layout (source read)", "text")],
            caption="MLA cache layout per transformers release, from its source"),
        measured_table=None if not measured else Table("models-measured", measured, [
            ("model", "model", "text"), ("match", "formula = measured", "bool"), ("kv_bytes", "measured", "bytes"),
            ("formula_bytes", "formula", "bytes"), ("seq_len", "tokens", "int"), ("batch_size", "batch", "int"),
            ("dtype", "dtype", "text"), ("transformers_version", "transformers", "text"), ("run_id", "run", "int"),
            ("layout", "MLA layout", "text")],
            caption="Cache bytes measured from the cache tensors of a prefill (cache_tensors) beside the formula"),
        unsupported_table=None if not unsupported else Table("models-unsupported", unsupported, [
            ("model", "model", "text"), ("reason", "why", "text")],
            caption="Catalogue models the facts do not cover yet"))
