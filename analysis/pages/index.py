"""Overview: where the evidence stands (which device classes the runs cover, what waits for a GPU), the
headline findings (one sentence and one number each, linking to their evidence) kept apart from the
demonstrations of a mechanism, a machine card per run, the runs table, and what was skipped and why."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from kvreport.analysis import claims
from kvreport.analysis.headlines import headlines, in_page_order
from kvreport.analysis.runs import config_key
from kvreport.analysis.site import PageSpec, Table
from kvreport.analysis.verdicts import Verdict

PAGE = PageSpec(slug="index", title="Overview", order=0)

DEVICE_CLASSES = {"cuda": "GPU", "cpu": "CPU", "mps": "Apple GPU"}

# The runs table: model and dtype first (what a reader compares), then where and how it ran. Columns that are
# empty for every run are dropped.
RUN_COLUMNS = [
    ("run_id", "run", "int"), ("model", "model", "text"), ("dtype", "dtype", "text"),
    ("device_name", "device", "text"), ("started_at", "started (UTC)", "text"), ("status", "status", "text"),
    ("label", "label", "text"), ("gpu_memory_bytes", "GPU memory", "bytes"), ("driver_version", "driver", "text"),
    ("cuda_version", "CUDA", "text"), ("torch_version", "torch", "text"),
    ("transformers_version", "transformers", "text"), ("weights_random", "random weights", "bool"),
    ("quick", "quick sweep", "bool"), ("n_ok", "ok", "int"), ("n_skipped", "skipped", "int"),
    ("n_failed", "failed", "int"), ("duration_s", "duration (s)", "int")]


@dataclass
class Coverage:
    """One device class the runs cover (CPU, GPU), with its devices and runs."""
    kind: str
    label: str
    devices: list[str]
    run_ids: list[int]


def coverage(runs: list[dict]) -> list[Coverage]:
    by_kind: dict[str, Coverage] = {}
    for r in runs:
        kind = r["device_kind"] or "unknown"
        c = by_kind.setdefault(kind, Coverage(kind, DEVICE_CLASSES.get(kind, kind), [], []))
        name = r["device_name"]
        if name and kind == "cpu" and r["cpu_count"]:
            name = f"{name} ({r['cpu_count']} logical CPUs)"  # a 2-CPU VM is not a server: say so up front
        if name and name not in c.devices:
            c.devices.append(name)
        c.run_ids.append(r["run_id"])
    return sorted(by_kind.values(), key=lambda c: (c.kind != "cuda", c.kind))


def gpu_state(states: list[dict]) -> str | None:
    """One line from a run's NVML readings (before and after each experiment): clock, power and temperature
    ranges, and which throttle reasons were active, so a slow run can be told from a throttled one."""
    if not states:
        return None

    def span(key, unit, fmt="{:,.0f}"):
        vals = [s[key] for s in states if s[key] is not None]
        if not vals:
            return None
        lo, hi = fmt.format(min(vals)), fmt.format(max(vals))
        return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"

    parts = [p for p in (span("sm_clock_mhz", " MHz SM"), span("mem_clock_mhz", " MHz memory"),
                         span("power_w", " W"), span("temp_c", " °C")) if p]
    throttled = [s for s in states if s["throttled"]]
    reasons = sorted({r for s in throttled for r in s["throttle_reasons"].split(",")})
    parts.append(f"throttled in {len(throttled)} of {len(states)} readings ({', '.join(reasons)})" if throttled
                 else f"no throttling in {len(states)} readings")
    return "; ".join(parts)


# Strings that mark a virtual machine in what a run records (no run records a hypervisor flag: the runs table
# has no such column, so this is inferred from the kernel release and the CPU model).
VM_KERNEL_TAGS = ("-fc-", "-aws", "-azure", "-gcp", "-kvm", "-virtual", "-cloud", "microsoft-standard")
VM_CPU_WORDS = ("qemu", "kvm", "virtual", "hypervisor")


def shared_vm(run: dict) -> str | None:
    """`shared VM (...)` with the recorded strings that say so, or None when nothing recorded says so."""
    why = []
    os_text = (run.get("os") or "").lower()
    why += [f"kernel release tag “{t.strip('-')}”" for t in VM_KERNEL_TAGS if t in os_text][:1]
    cpu = (run.get("cpu") or "").lower()
    why += [f"CPU model “{run['cpu']}”" for w in VM_CPU_WORDS if w in cpu][:1]
    if not why:
        return None
    return (f"shared VM, inferred from {', '.join(why)} (the run records no hypervisor flag): other tenants share "
            "its cores and memory bandwidth, so timings carry their noise")


def machine(run: dict, states: Sequence[dict] = ()) -> dict:
    """A run's machine card: what a reader needs to judge and reproduce its numbers."""
    def gib(v):
        return None if v is None else f"{v / 2 ** 30:.1f} GiB"

    cpu = run["cpu"] and (f"{run['cpu']}, {run['cpu_count']} logical CPUs" if run["cpu_count"] else run["cpu"])
    gpu = run["gpu_name"] and ", ".join(x for x in (
        (f"{run['gpu_count']} × " if (run["gpu_count"] or 0) > 1 else "") + run["gpu_name"],
        gib(run["gpu_memory_bytes"]), run["driver_version"] and f"driver {run['driver_version']}",
        run["cuda_version"] and f"CUDA {run['cuda_version']}") if x)
    versions = ", ".join(f"{name} {v}" for name, v in (
        ("torch", run["torch_version"]), ("transformers", run["transformers_version"]),
        ("kvreport", run["kvreport_version"]), ("Python", run["python_version"])) if v)
    weights = {True: "random (built from the config)", False: "real (downloaded)"}.get(run["weights_random"])
    fields = [("host", shared_vm(run)), ("CPU", cpu), ("memory", gib(run["host_memory_bytes"])),
              ("GPU", gpu or "none"), ("weights", weights),
              ("GPU state (NVML)", gpu_state(list(states))),
              ("OS", run["os"]), ("versions", versions), ("kvreport commit", run.get("kvreport_commit")),
              ("started (UTC)", run["started_at"] and str(run["started_at"]))]
    return {"run": run, "fields": [(k, v) for k, v in fields if v], "command": run["command_line"]}


@dataclass
class OverviewPage:
    runs: list[dict]
    run_columns: list[tuple]  # RUN_COLUMNS less those empty for every run
    coverage: list[Coverage]
    has_gpu: bool
    groups: list[dict]        # per configuration: its latest run, findings and demonstrations
    general: list[dict]       # headlines not tied to a run
    machines: list[dict]      # one card per run, newest first
    skips: list[dict]
    runs_table: Table
    skips_table: Table | None  # the experiments without data (None: every experiment produced data)
    n_claims: int
    n_verdicts: int
    n_pending: int            # GPU measurements with only CPU evidence
    verdicts: list[tuple[str, int]]
    devices: list[str]
    models: list[str]


def context(q, site) -> OverviewPage:
    runs = q("runs")
    device_states = q("device_state")  # NVML clocks/power/temperature/throttling around each experiment
    statuses = q("experiment_status")
    rows = in_page_order(headlines(q, site.run_ids, site.page_order()))

    # One group per configuration (device, model, dtype), showing its latest run: older runs of the same
    # configuration are superseded here and compared on the comparison page.
    latest: dict[tuple, dict] = {}
    n_runs: dict[tuple, int] = {}
    with_findings = {h["run_id"] for h in rows}
    for r in runs:
        key = config_key(r)
        n_runs[key] = n_runs.get(key, 0) + 1
        if r["run_id"] in with_findings or key not in latest:
            latest[key] = r
    groups = []
    for key, run in sorted(latest.items(), key=lambda kv: -kv[1]["run_id"]):
        items = [h for h in rows if h["run_id"] == run["run_id"]]
        groups.append({"run": run, "label": site.run_label(run["run_id"]),
                       "findings": [h for h in items if not h["demonstration"]],
                       "demos": [h for h in items if h["demonstration"]], "older": n_runs[key] - 1})

    # What did not run, once per (experiment, status, reason), with the runs it hit.
    skipped: dict[tuple, list[int]] = {}
    for s in statuses:
        if s["status"] != "ok":
            skipped.setdefault((s["experiment"], s["status"], s["reason"] or ""), []).append(s["run_id"])
    skips = [{"experiment": e, "status": st, "reason": reason, "runs": ", ".join(str(i) for i in sorted(ids)),
              "n_runs": len(ids)} for (e, st, reason), ids in sorted(skipped.items())]

    ledger = claims.current(claims.ledger(q, site.run_ids), site.runs) if site.has_page("claims") else []
    cov = coverage(runs)
    run_columns = [c for c in RUN_COLUMNS if any(r[c[0]] is not None for r in runs)]
    csv = site.csv_files.get
    return OverviewPage(
        runs=runs, run_columns=run_columns,
        runs_table=Table("runs-environment", runs, run_columns, csv=csv("runs"),
                         caption="Every run in the DB" if len(runs) == site.n_runs else
                         f"{len(runs):,} of the {site.n_runs:,} runs in the DB: every one is in the CSV"),
        skips_table=None if not skips else Table("runs-skipped", skips, [
            ("experiment", "experiment", "code"), ("status", "status", "text"), ("reason", "reason", "text"),
            ("runs", "runs", "text")],
            caption="Experiments without data, with the reason", csv=csv("experiments")),
        coverage=cov, has_gpu=any(c.kind == "cuda" for c in cov), groups=groups,
        general=[h for h in rows if h["run_id"] is None],
        machines=[machine(r, [s for s in device_states if s["run_id"] == r["run_id"]])
                  for r in sorted(runs, key=lambda r: -r["run_id"])], skips=skips,
        n_claims=len({c["claim_id"] for c in ledger}), n_verdicts=len(ledger),
        n_pending=sum(c["verdict"] == Verdict.GPU_PENDING for c in ledger),
        verdicts=claims.verdict_counts(ledger),
        devices=sorted({r["device_name"] for r in runs if r["device_name"]}),
        models=sorted({r["model"] for r in runs if r["model"]}))
