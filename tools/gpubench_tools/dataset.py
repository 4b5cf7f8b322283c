"""Turn loaded bench files into typed, repetition-reduced points the charts work on.

Rows are classified by their label: `workload` (matmul, mlp, ...) and `backend` (cpu or gpu)
where the label carries them, as every row of current bench does. Files written before the label
had those keys are classified by the first two parts of the name (`<workload>/<backend>/...`, with
every `overhead/` probe on the GPU). Which counters a row happens to have never decides what it is.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .benchjson import BenchReport, BenchRow, iteration_rows, load_report, skip_reason

__all__ = [
    "BACKENDS",
    "GPU_MLP_VARIANTS",
    "Point",
    "Source",
    "load_sources",
    "name_backend",
    "name_workload",
    "same_machine",
    "short_gpu_name",
    "short_cpu_name",
]


@dataclass
class Point:
    """One benchmark (one run_name), reduced over its repetitions.

    `time` is the median real time in seconds, `time_min`/`time_max` its spread; `counters`
    holds the median of every counter.
    """

    run_name: str
    labels: dict[str, str]
    counters: dict[str, float]
    time: float
    time_min: float
    time_max: float
    repetitions: int

    def c(self, key: str, default: float = math.nan) -> float:
        return self.counters.get(key, default)

    def has(self, *keys: str) -> bool:
        return all(k in self.counters for k in keys)

    @property
    def spread(self) -> tuple[float, float]:
        """(min/median, max/median): the relative spread, to scale any per-iteration value."""
        if not self.time or math.isnan(self.time):
            return 1.0, 1.0
        return self.time_min / self.time, self.time_max / self.time

    # --- classification (label, else the name of an older file) ----------------------------

    @property
    def workload(self) -> str | None:
        """matmul, mlp, overhead, ...: the label's `workload`, else the name's first part."""
        if "workload" in self.labels:
            return self.labels["workload"] or None
        return name_workload(self.run_name)

    @property
    def backend(self) -> str | None:
        """ "cpu" or "gpu": the label's `backend`, else what the name says (None if neither)."""
        if "backend" in self.labels:
            return self.labels["backend"] or None
        return name_backend(self.run_name)

    @property
    def is_matmul(self) -> bool:
        return self.workload == "matmul" and "probe" not in self.labels

    @property
    def is_gpu(self) -> bool:
        return self.backend == "gpu"

    @property
    def is_e2e(self) -> bool:
        return self.is_matmul and self.is_gpu and "host" in self.labels

    @property
    def is_kernel_only(self) -> bool:
        return self.is_matmul and self.is_gpu and "host" not in self.labels

    @property
    def is_mlp(self) -> bool:
        return self.workload == "mlp"

    @property
    def probe(self) -> str | None:
        return self.labels.get("probe")

    @property
    def dtype(self) -> str:
        return self.labels.get("dtype", "fp32")

    @property
    def shape(self) -> str:
        return self.labels.get("shape", "square")

    @property
    def mnk(self) -> tuple[int, int, int]:
        return int(self.c("m")), int(self.c("n")), int(self.c("k"))


# The GPU training paths of bench, in the order the charts show them.
GPU_MLP_VARIANTS = ("eager", "graph", "fused")
BACKENDS = ("cpu", "gpu")


def name_workload(run_name: str) -> str | None:
    """The workload of a benchmark name `<workload>/<backend>/<variant>/...`: its first part."""
    first = run_name.split("/", 1)[0]
    return first or None


def name_backend(run_name: str) -> str | None:
    """The backend of a benchmark name: its second part when that is cpu or gpu; the overhead
    probes (`overhead/launch/...`, `overhead/h2d/...`) all measure the GPU."""
    parts = run_name.split("/")
    if parts[0] == "overhead":
        return "gpu"
    return parts[1] if len(parts) > 1 and parts[1] in BACKENDS else None


def short_gpu_name(name: str) -> str:
    return re.sub(r"^NVIDIA\s+", "", name.strip()) or name


def short_cpu_name(name: str) -> str:
    s = re.sub(r"\((R|TM|tm|r)\)", "", name)
    s = re.sub(r"\s+CPU\b(?=\s+\S)", "", s)  # "Xeon(R) CPU E5-2680" -> "Xeon E5-2680"
    s = re.sub(r"\s*@.*$", "", s)
    return re.sub(r"\s+", " ", s).strip() or name


@dataclass
class Source:
    """One machine: the context, the points and the names used to label it in charts.

    Several input files recorded on the same hardware (for example one file per workload of
    one session) are merged into one Source; `paths` lists them in the order given.
    """

    paths: list[str]
    report: BenchReport
    points: list[Point]
    gpu_name: str | None
    cpu_name: str
    tag: str = ""  # disambiguates two machines whose device names are the same
    # (file, row) of the benchmarks that reported an error, one row per benchmark: `failed` went
    # wrong, `skipped` did not fit on the machine (benchjson.SKIP_PREFIXES).
    failed: list[tuple[str, BenchRow]] = field(default_factory=list)
    skipped: list[tuple[str, BenchRow]] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The input file(s) as one string for sentences: "a.json" or "a.json + b.json"."""
        return " + ".join(self.paths)

    @property
    def file_names(self) -> str:
        """The base names of the input file(s), for headers and the inputs line."""
        return " + ".join(Path(p).name for p in self.paths)

    @property
    def has_gpu(self) -> bool:
        return self.gpu_name is not None and any(p.is_gpu for p in self.points)

    @property
    def gpu_label(self) -> str:
        base = short_gpu_name(self.gpu_name) if self.gpu_name else "no GPU"
        return f"{base} ({self.tag})" if self.tag else base

    @property
    def cpu_label(self) -> str:
        base = short_cpu_name(self.cpu_name)
        return f"{base} ({self.tag})" if self.tag else base

    @property
    def label(self) -> str:
        """The device name a reader knows this machine by: the GPU, else the CPU."""
        return self.gpu_label if self.gpu_name else self.cpu_label

    def ctx_float(self, key: str) -> float | None:
        try:
            value = float(self.report.context.get(key, ""))
        except (TypeError, ValueError):
            return None
        return value if math.isfinite(value) and value > 0 else None

    def gpu_peak(self, dtype: str) -> float | None:
        return self.ctx_float(f"gpu_peak_{dtype}_flops")

    # --- selections --------------------------------------------------------------------------

    def matmul_cpu(self) -> list[Point]:
        return [p for p in self.points if p.is_matmul and not p.is_gpu]

    def matmul_kernel(self) -> list[Point]:
        return [p for p in self.points if p.is_kernel_only]

    def matmul_e2e(self) -> list[Point]:
        return [p for p in self.points if p.is_e2e]

    def probes(self, probe: str, host: str | None = None) -> list[Point]:
        return [
            p
            for p in self.points
            if p.probe == probe and (host is None or p.labels.get("host") == host)
        ]

    def mlp(self) -> list[Point]:
        return [p for p in self.points if p.is_mlp]


def _reduce(rows: list[BenchRow]) -> Point:
    times = [r.real_time_s for r in rows]
    keys = set().union(*(r.counters for r in rows))
    counters = {
        k: statistics.median([r.counters[k] for r in rows if k in r.counters]) for k in keys
    }
    return Point(
        run_name=rows[0].run_name,
        labels=dict(rows[0].labels),
        counters=counters,
        time=statistics.median(times),
        time_min=min(times),
        time_max=max(times),
        repetitions=len(rows),
    )


def points_of(report: BenchReport) -> list[Point]:
    """One Point per benchmark: medians over repetitions.

    A file written with --benchmark_report_aggregates_only has no iteration rows; its
    "median" (else "mean") aggregate is used then, without spread.
    """
    # The same GEMM can be registered under two shape families (128^3 is both "square" and
    # "mlp_layer"), giving identical run names: the label keeps them apart.
    groups: dict[tuple[str, str], list[BenchRow]] = {}
    for row in iteration_rows(report):
        groups.setdefault((row.run_name, row.label), []).append(row)
    points = [_reduce(rows) for rows in groups.values()]
    for wanted in ("median", "mean"):
        for row in report.rows:
            key = (row.run_name, row.label)
            if (
                row.run_type == "aggregate"
                and row.aggregate_name == wanted
                and row.error is None
                and key not in groups
            ):
                groups[key] = [row]
                points.append(_reduce([row]))
    return points


_MACHINE_KEYS = ("gpu", "cpu_model", "cpu_logical_cpus")


def _ctx_str(context: dict[str, Any], key: str) -> str | None:
    value = context.get(key)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def same_machine(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """True when two contexts describe the same hardware: the same GPU, CPU model and logical
    CPU count, and the same host name where both files record one.

    A context that names neither a GPU nor a CPU identifies nothing and never matches.
    """
    gpu = _ctx_str(a, "gpu")
    if _ctx_str(a, "cpu_model") is None and (gpu is None or gpu.lower() == "none"):
        return False
    if any(_ctx_str(a, k) != _ctx_str(b, k) for k in _MACHINE_KEYS):
        return False
    ha, hb = _ctx_str(a, "host_name"), _ctx_str(b, "host_name")
    return ha is None or hb is None or ha == hb


def _error_rows(report: BenchReport) -> list[BenchRow]:
    errors = [r for r in report.rows if r.error is not None and r.run_type == "iteration"]
    # One line per failed or skipped benchmark, not per repetition.
    seen: set[str] = set()
    return [r for r in errors if not (r.run_name in seen or seen.add(r.run_name))]


def _error_warnings(path: str, failed: list[BenchRow], skipped: list[BenchRow]) -> list[str]:
    out = []
    if failed:
        n = len(failed)
        out.append(f"{n} benchmark{'' if n == 1 else 's'} in {path} failed (listed in the report)")
    if skipped:
        n = len(skipped)
        reasons = Counter(skip_reason(r.error) for r in skipped)
        why = ", ".join(f"{reason}" if k == n else f"{k} {reason}" for reason, k in reasons.items())
        out.append(
            f"{n} benchmark{'' if n == 1 else 's'} in {path} {'was' if n == 1 else 'were'} "
            f"skipped, {why} (listed in the report)"
        )
    return out


def _merge(reports: list[BenchReport]) -> tuple[BenchReport, list[str]]:
    """One report from files of the same machine: rows concatenated, context of the first.

    A benchmark present in more than one file is reduced over all its rows (median), as if
    they were repetitions; the returned warnings say so.
    """
    first = reports[0]
    if len(reports) == 1:
        return first, []
    warnings: list[str] = []
    names_in: dict[str, list[str]] = {}
    for rep in reports:
        for name in sorted({r.run_name for r in iteration_rows(rep)}):
            names_in.setdefault(name, []).append(rep.path)
    shared = [name for name, files in names_in.items() if len(files) > 1]
    if shared:
        files = sorted({f for name in shared for f in names_in[name]})
        what = "benchmark appears" if len(shared) == 1 else "benchmarks appear"
        warnings.append(
            f"{len(shared)} {what} in more than one of {', '.join(files)} (same machine): "
            f"their rows are treated as repetitions and reduced to medians "
            f"(for example {shared[0]})"
        )
    merged = BenchReport(
        path=first.path,
        context=first.context,
        rows=[r for rep in reports for r in rep.rows],
        recovered_from_truncation=any(rep.recovered_from_truncation for rep in reports),
        warnings=[w for rep in reports for w in rep.warnings],
    )
    return merged, warnings


def load_sources(paths: list[str]) -> tuple[list[Source], list[str]]:
    """Load every file (BenchJsonError propagates), merge the files of one machine and name
    each machine by its hardware.

    Files whose contexts describe the same hardware (see `same_machine`) become one Source;
    only genuinely different machines stay separate, to be overlaid in the charts.
    """
    reports = [load_report(path) for path in paths]
    groups: list[list[BenchReport]] = []
    for report in reports:
        home = next((g for g in groups if same_machine(g[0].context, report.context)), None)
        if home is None:
            groups.append([report])
        else:
            home.append(report)

    sources: list[Source] = []
    warnings: list[str] = []
    for group in groups:
        report, merge_warnings = _merge(group)
        warnings += report.warnings
        failed: list[tuple[str, BenchRow]] = []
        skipped: list[tuple[str, BenchRow]] = []
        for part in group:
            rows = _error_rows(part)
            part_failed = [r for r in rows if not r.skipped]
            part_skipped = [r for r in rows if r.skipped]
            warnings += _error_warnings(part.path, part_failed, part_skipped)
            failed += [(part.path, r) for r in part_failed]
            skipped += [(part.path, r) for r in part_skipped]
        warnings += merge_warnings
        ctx = report.context
        gpu = str(ctx.get("gpu", "none"))
        sources.append(
            Source(
                paths=[part.path for part in group],
                report=report,
                points=points_of(report),
                gpu_name=None if gpu.lower() in ("", "none") else gpu,
                cpu_name=str(ctx.get("cpu_model", "unknown CPU")),
                failed=failed,
                skipped=skipped,
            )
        )
    # Two machines with the same device names would get the same legend entry: tell them
    # apart by host name where every such machine records a different one, else by file.
    names = Counter((s.gpu_name, s.cpu_name) for s in sources)
    for key, count in names.items():
        if count < 2:
            continue
        twins = [s for s in sources if (s.gpu_name, s.cpu_name) == key]
        hosts = [_ctx_str(s.report.context, "host_name") for s in twins]
        by_host = None not in hosts and len(set(hosts)) == len(hosts)
        for s, host in zip(twins, hosts):
            s.tag = str(host) if by_host else Path(s.paths[0]).stem
    return sources, warnings
