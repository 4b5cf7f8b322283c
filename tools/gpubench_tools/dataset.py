"""Turn loaded bench files into typed, repetition-reduced points the charts work on.

Rows are classified by their label: `workload` (matmul, mlp, ...) and `backend` (cpu or gpu)
where the label carries them, as every row of current bench does. Files written before the label
had those keys are classified by the first two parts of the name (`<workload>/<backend>/...`, with
every `overhead/` probe on the GPU). Which counters a row happens to have never decides what it is.

A run without GPU rows can borrow its GPU side from another machine's run (`load_sources(...,
gpu_reference=[...])`): the Source then holds this run's CPU rows and the reference's GPU rows, and
keeps the reference's context apart (`Source.gpu_reference`) so every label can say whose each
number is. `python -m gpubench_tools.dataset --gpu-rows FILE...` counts the GPU benchmarks of a
run, which is how scripts decide whether to add a reference.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .benchjson import (
    BenchJsonError,
    BenchReport,
    BenchRow,
    describe_invalid,
    iteration_rows,
    load_report,
    skip_reason,
    usable_counter,
)

__all__ = [
    "BACKENDS",
    "GPU_MLP_VARIANTS",
    "GpuReference",
    "Point",
    "Source",
    "gpu_benchmark_count",
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
    holds the median of every counter and `counter_samples` each counter's value in every
    repetition (for percentiles beyond the median).
    """

    run_name: str
    labels: dict[str, str]
    counters: dict[str, float]
    time: float
    time_min: float
    time_max: float
    repetitions: int
    counter_samples: dict[str, list[float]] = field(default_factory=dict)

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
    def precision(self) -> str:
        """The arithmetic of a training row (label `precision`): fp32 rows carry none."""
        return self.labels.get("precision", "fp32")

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
class GpuReference:
    """Where the GPU rows of a Source come from when they are not its own run's: the files of a
    reference run recorded on another machine, and that run's context (GPU, host, date, commit).
    """

    paths: list[str]
    context: dict[str, Any]
    same_host: bool = False  # the reference records this run's CPU model, CPU count and host name

    @property
    def file_names(self) -> str:
        return " + ".join(Path(p).name for p in self.paths)

    @property
    def elsewhere(self) -> str:
        """Where the GPU numbers were measured, as a reader of this run's report sees it."""
        return "in a separate run on this host" if self.same_host else "on another machine"

    @property
    def date(self) -> str | None:
        """The day the reference was recorded (the context's ISO date without the time)."""
        text = _ctx_str(self.context, "date")
        return text.split("T", 1)[0] if text else None

    @property
    def commit(self) -> str | None:
        commit = _ctx_str(self.context, "gpubench_git_commit")
        return None if commit in (None, "unknown") else commit

    def provenance(self) -> str:
        """'recorded on another host (Intel Xeon Processor, 16 logical CPUs, host vm) on
        2026-11-23 at suite commit c24b26935322': where, when and from which code."""
        cpu = _ctx_str(self.context, "cpu_model")
        parts = [short_cpu_name(cpu)] if cpu else []
        cpus = _ctx_str(self.context, "cpu_logical_cpus")
        if cpus:
            parts.append(f"{cpus} logical CPUs")
        host = _ctx_str(self.context, "host_name")
        if host:
            parts.append(f"host {host}")
        where = (
            "on a host with this run's CPU and host name" if self.same_host else "on another host"
        )
        text = f"recorded {where}" + (f" ({', '.join(parts)})" if parts else "")
        if self.date:
            text += f" on {self.date}"
        if self.commit:
            text += f" at suite commit {self.commit}"
        return text


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
    # (file, row) of the rows whose values cannot be a measurement (NaN, Infinity, zero or absurd
    # times; benchjson.invalid_reason), one row per benchmark: never a point.
    invalid: list[tuple[str, BenchRow]] = field(default_factory=list)
    # Set when the GPU points are another machine's (a reference run) and the CPU points this
    # run's: `report` is then this run's and the GPU's context lives here.
    gpu_reference: GpuReference | None = None

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
    def mixes_machines(self) -> bool:
        """True when the CPU points are this run's and the GPU points a reference run's."""
        return self.gpu_reference is not None

    @property
    def gpu_context(self) -> dict[str, Any]:
        """The context that describes the GPU: the reference run's when the GPU rows are its."""
        return self.gpu_reference.context if self.gpu_reference else self.report.context

    @property
    def gpu_label(self) -> str:
        base = short_gpu_name(self.gpu_name) if self.gpu_name else "no GPU"
        if self.gpu_reference is not None:
            # Every chart legend and sentence that names the GPU then says it is not this run's.
            base += " (reference run)"
        return f"{base} ({self.tag})" if self.tag else base

    @property
    def cpu_label(self) -> str:
        base = short_cpu_name(self.cpu_name)
        if self.gpu_reference is not None:
            base += " (this run)"
        return f"{base} ({self.tag})" if self.tag else base

    @property
    def label(self) -> str:
        """The device name a reader knows this machine by: the GPU, else the CPU."""
        return self.gpu_label if self.gpu_name else self.cpu_label

    def ctx_float(self, key: str, context: dict[str, Any] | None = None) -> float | None:
        """A positive number from the context (this run's unless `context` is given)."""
        ctx = self.report.context if context is None else context
        try:
            value = float(ctx.get(key, ""))
        except (TypeError, ValueError):
            return None
        return value if math.isfinite(value) and value > 0 else None

    def gpu_peak(self, dtype: str) -> float | None:
        return self.ctx_float(f"gpu_peak_{dtype}_flops", self.gpu_context)

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

    def mlp(self, precision: str | None = "fp32") -> list[Point]:
        """The MLP rows of one precision (fp32 by default: a bf16 row of the same net and batch
        answers another question); None for every precision."""
        return [p for p in self.points if p.is_mlp and precision in (None, p.precision)]


def _reduce(rows: list[BenchRow]) -> Point:
    times = [r.real_time_s for r in rows]
    keys = set().union(*(r.counters for r in rows))
    # A NaN or absurd counter (a diverged final_loss) is no number to plot or to fit: the point
    # goes without it, and keeps its time.
    samples = {
        k: [r.counters[k] for r in rows if k in r.counters and usable_counter(r.counters[k])]
        for k in keys
    }
    samples = {k: v for k, v in samples.items() if v}
    return Point(
        run_name=rows[0].run_name,
        labels=dict(rows[0].labels),
        counters={k: statistics.median(v) for k, v in samples.items()},
        time=statistics.median(times),
        time_min=min(times),
        time_max=max(times),
        repetitions=len(rows),
        counter_samples=samples,
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
                and row.usable
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


def _machine_groups(paths: Sequence[str]) -> list[list[BenchReport]]:
    """Load every file (BenchJsonError propagates) and group the files of one machine."""
    reports = [load_report(path) for path in paths]
    groups: list[list[BenchReport]] = []
    for report in reports:
        home = next((g for g in groups if same_machine(g[0].context, report.context)), None)
        if home is None:
            groups.append([report])
        else:
            home.append(report)
    return groups


def _row_is_gpu(row: BenchRow) -> bool:
    """The same rule as Point.backend, for a row that reported an error (and so is no Point)."""
    backend = row.labels["backend"] if "backend" in row.labels else name_backend(row.run_name)
    return backend == "gpu"


def _source_of(group: list[BenchReport]) -> tuple[Source, list[str]]:
    """One machine's Source from its files, with the warnings of reading and merging them."""
    report, merge_warnings = _merge(group)
    warnings = list(report.warnings)
    failed: list[tuple[str, BenchRow]] = []
    skipped: list[tuple[str, BenchRow]] = []
    invalid: list[tuple[str, BenchRow]] = []
    for part in group:
        seen: set[str] = set()
        part_invalid = [
            r
            for r in part.rows
            if r.invalid is not None and not (r.run_name in seen or seen.add(r.run_name))
        ]
        if part_invalid:
            warnings.append(f"{part.path}: {describe_invalid(part_invalid)}: not used")
        invalid += [(part.path, r) for r in part_invalid]
        rows = _error_rows(part)
        part_failed = [r for r in rows if not r.skipped]
        part_skipped = [r for r in rows if r.skipped]
        warnings += _error_warnings(part.path, part_failed, part_skipped)
        failed += [(part.path, r) for r in part_failed]
        skipped += [(part.path, r) for r in part_skipped]
    warnings += merge_warnings
    ctx = report.context
    gpu = str(ctx.get("gpu", "none"))
    source = Source(
        paths=[part.path for part in group],
        report=report,
        points=points_of(report),
        gpu_name=None if gpu.lower() in ("", "none") else gpu,
        cpu_name=str(ctx.get("cpu_model", "unknown CPU")),
        failed=failed,
        skipped=skipped,
        invalid=invalid,
    )
    return source, warnings


def _same_host(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = ("cpu_model", "cpu_logical_cpus", "host_name")
    return all(_ctx_str(a, k) is not None and _ctx_str(a, k) == _ctx_str(b, k) for k in keys)


def _with_gpu_reference(
    sources: list[Source], reference_paths: Sequence[str]
) -> tuple[list[Source], list[str]]:
    """This run's CPU rows with the GPU rows of a reference run from another machine.

    The reference is used only when the run has no GPU rows of its own: a run with them is
    reported as it is, with a warning that the reference was not used. GPU rows are taken only
    from the reference files and CPU rows only from the run, so no number is ever silently
    attributed to the wrong machine.
    """
    ref_groups = _machine_groups(reference_paths)
    ref_sources = [_source_of(g)[0] for g in ref_groups]
    gpu_refs = [s for s in ref_sources if any(p.is_gpu for p in s.points)]
    if not gpu_refs:
        raise BenchJsonError(
            ", ".join(reference_paths),
            "--gpu-reference needs a run with GPU rows; this one has none",
        )
    if len(gpu_refs) > 1:
        raise BenchJsonError(
            ", ".join(reference_paths),
            f"--gpu-reference files come from {len(gpu_refs)} GPU machines "
            f"({', '.join(s.gpu_label for s in gpu_refs)}); give the files of one",
        )
    own = [s for s in sources if any(p.is_gpu for p in s.points)]
    if own:
        return sources, [
            f"--gpu-reference {', '.join(Path(p).name for p in reference_paths)} not used: "
            f"{', '.join(s.file_names for s in own)} has GPU rows of its own"
        ]
    if len(sources) > 1:
        raise BenchJsonError(
            ", ".join(p for s in sources for p in s.paths),
            f"--gpu-reference pairs the reference GPU with one machine's CPU; these files come "
            f"from {len(sources)} machines",
        )
    (run,), ref = sources, gpu_refs[0]
    failed = [(f, r) for f, r in ref.failed if _row_is_gpu(r)]
    skipped = [(f, r) for f, r in ref.skipped if _row_is_gpu(r)]
    warnings = list(ref.report.warnings)  # a reference recovered from truncation says so
    for path in ref.paths:
        warnings += _error_warnings(
            path, [r for f, r in failed if f == path], [r for f, r in skipped if f == path]
        )
    mixed = Source(
        paths=run.paths,
        report=run.report,
        points=[p for p in run.points if not p.is_gpu] + [p for p in ref.points if p.is_gpu],
        gpu_name=ref.gpu_name,
        cpu_name=run.cpu_name,
        failed=run.failed + failed,
        skipped=run.skipped + skipped,
        gpu_reference=GpuReference(
            paths=ref.paths,
            context=ref.report.context,
            same_host=_same_host(ref.report.context, run.report.context),
        ),
    )
    return [mixed], warnings


def load_sources(
    paths: Sequence[str], gpu_reference: Sequence[str] = ()
) -> tuple[list[Source], list[str]]:
    """Load every file (BenchJsonError propagates), merge the files of one machine and name
    each machine by its hardware.

    Files whose contexts describe the same hardware (see `same_machine`) become one Source;
    only genuinely different machines stay separate, to be overlaid in the charts.
    `gpu_reference`: files of another machine's run whose GPU rows stand in for the GPU side of
    a run that has none (see `_with_gpu_reference`).
    """
    sources: list[Source] = []
    warnings: list[str] = []
    for group in _machine_groups(paths):
        source, group_warnings = _source_of(group)
        sources.append(source)
        warnings += group_warnings
    if gpu_reference:
        sources, reference_warnings = _with_gpu_reference(sources, gpu_reference)
        warnings += reference_warnings
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


def gpu_benchmark_count(paths: Sequence[str]) -> int:
    """The number of GPU benchmarks (successful, by the rows' classification) in the files."""
    return sum(
        1 for group in _machine_groups(paths) for p in _source_of(group)[0].points if p.is_gpu
    )


def _main(argv: Sequence[str] | None = None) -> int:
    """`python -m gpubench_tools.dataset --gpu-rows FILE...`: the number of GPU benchmarks in the
    files on stdout (exit 0), or the reason a file is unusable on stderr (exit 2)."""
    import argparse

    from .cli import EXIT_OK, UnusableInput, add_debug_flag, program_name, run_main

    prog = program_name("gpubench_tools.dataset")

    def body(args_list: Sequence[str] | None) -> int:
        parser = argparse.ArgumentParser(
            prog=prog,
            description="Count the GPU benchmarks of bench JSON files (0: a CPU-only run).",
        )
        parser.add_argument("--gpu-rows", nargs="+", metavar="FILE", required=True)
        add_debug_flag(parser)
        args = parser.parse_args(args_list)
        try:
            print(gpu_benchmark_count(args.gpu_rows))
        except BenchJsonError as exc:
            raise UnusableInput(str(exc)) from None
        return EXIT_OK

    return run_main(prog, body, argv)


if __name__ == "__main__":
    raise SystemExit(_main())
