"""Turn loaded bench files into typed, repetition-reduced points the charts work on.

Rows are classified by counters and label only (never by parsing names): the names are for
humans and filters, the counters and label are the contract.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .benchjson import BenchReport, BenchRow, iteration_rows, load_report

__all__ = ["Point", "Source", "load_sources", "short_gpu_name", "short_cpu_name"]


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

    # --- classification (counters + label only) -------------------------------------------

    @property
    def is_matmul(self) -> bool:
        return (
            self.has("m", "n", "k", "flop")
            and "dtype" in self.labels
            and "probe" not in self.labels
        )

    @property
    def is_gpu(self) -> bool:
        # GPU rows carry CUDA-event phase times and a launch count; CPU rows never do.
        if "variant" in self.labels and self.labels["variant"] in GPU_MLP_VARIANTS:
            return True
        return "t_compute" in self.counters or (
            "kernels" in self.counters and "threads" not in self.counters
        )

    @property
    def is_e2e(self) -> bool:
        return self.is_matmul and self.is_gpu and "host" in self.labels

    @property
    def is_kernel_only(self) -> bool:
        return self.is_matmul and self.is_gpu and "host" not in self.labels

    @property
    def is_mlp(self) -> bool:
        return "data" in self.labels and self.has("batch", "t_epoch")

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


GPU_MLP_VARIANTS = ("eager", "graph", "fused")


def short_gpu_name(name: str) -> str:
    return re.sub(r"^NVIDIA\s+", "", name.strip()) or name


def short_cpu_name(name: str) -> str:
    s = re.sub(r"\((R|TM|tm|r)\)", "", name)
    s = re.sub(r"\s+CPU\b(?=\s+\S)", "", s)  # "Xeon(R) CPU E5-2680" -> "Xeon E5-2680"
    s = re.sub(r"\s*@.*$", "", s)
    return re.sub(r"\s+", " ", s).strip() or name


@dataclass
class Source:
    """One input file: its context, its points and the names used to label it in charts."""

    path: str
    report: BenchReport
    points: list[Point]
    gpu_name: str | None
    cpu_name: str
    tag: str = ""  # disambiguates two files from identical hardware
    failed: list[BenchRow] = field(default_factory=list)

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


def load_sources(paths: list[str]) -> tuple[list[Source], list[str]]:
    """Load every file (BenchJsonError propagates) and name each by its hardware."""
    sources: list[Source] = []
    warnings: list[str] = []
    for path in paths:
        report = load_report(path)
        warnings += report.warnings
        ctx = report.context
        gpu = str(ctx.get("gpu", "none"))
        failed = [r for r in report.rows if r.error is not None and r.run_type == "iteration"]
        # One line per failed benchmark, not per repetition.
        seen: set[str] = set()
        failed = [r for r in failed if not (r.run_name in seen or seen.add(r.run_name))]
        if failed:
            what = (
                "benchmark in {} failed or was"
                if len(failed) == 1
                else "benchmarks in {} failed or were"
            )
            warnings.append(f"{len(failed)} {what.format(path)} skipped (listed in the report)")
        sources.append(
            Source(
                path=path,
                report=report,
                points=points_of(report),
                gpu_name=None if gpu.lower() in ("", "none") else gpu,
                cpu_name=str(ctx.get("cpu_model", "unknown CPU")),
                failed=failed,
            )
        )
    # Two files from the same machines would get the same legend entry: add the file name.
    names = Counter((s.gpu_name, s.cpu_name) for s in sources)
    for s in sources:
        if names[(s.gpu_name, s.cpu_name)] > 1:
            s.tag = Path(s.path).stem
    return sources, warnings
