"""Assemble the report: for each topic, the charts, the sentences and the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from . import charts_cnn as ccnn
from . import charts_matmul as cm
from . import charts_mlp as cmlp
from . import charts_overhead as co
from ..benchjson import SKIP_PREFIXES, group_reasons
from ..dataset import Source, short_cpu_name, short_gpu_name
from .matmul_analysis import speedup_series
from .cnn_analysis import (
    OP_KINDS,
    cnn_crossovers,
    cnn_data_set,
    cnn_lines,
    cnn_points,
    kind_shares,
    profile_batch,
    profiles_at,
)
from .memory_section import memory_section
from .mlp_analysis import mlp_points
from .precision_analysis import precision_pairs
from .precision_section import precision_section
from .precision_sentences import precision_sentences
from ..overhead_model import OverheadModel, build_model
from .section_parts import keep_charts, mixed_note
from .writer import Details, Document, Section, Table
from .sentences import (
    breakdown_sentences,
    cnn_sentences,
    crossover_clause,
    mlp_sentences,
    overhead_sentences,
    reference_warning,
    speedup_sentences,
    utilisation_sentences,
    whose_numbers_sentences,
)
from ..units import fmt_bytes, fmt_flops, fmt_pct, fmt_rate, fmt_ratio, fmt_size, fmt_time

__all__ = ["build_document", "context_table"]


def _num(fmt: Callable[[float], str]) -> Callable[[Any], str]:
    def f(value: Any) -> str:
        try:
            return fmt(float(value))
        except (TypeError, ValueError):
            return str(value)

    return f


def _hz(v: float) -> str:
    return f"{v / 1e9:.2f} GHz"


def _caches(value: Any) -> str:
    if not isinstance(value, list):
        return str(value)
    out = []
    for c in value:
        if isinstance(c, dict):
            kind = {"Data": "d", "Instruction": "i", "Unified": ""}.get(str(c.get("type")), "")
            out.append(f"L{c.get('level')}{kind} {fmt_bytes(float(c.get('size', 0)))}")
    return ", ".join(out)


# (row title, context key, formatter); the order a reader scans a machine description in.
_CONTEXT_ROWS: list[tuple[str, str, Callable[[Any], str]]] = [
    ("GPU", "gpu", str),
    ("GPU unavailable because", "gpu_unavailable_reason", str),
    ("compute capability", "gpu_compute_capability", str),
    ("SMs", "gpu_sm_count", str),
    ("SM clock", "gpu_sm_clock_hz", _num(_hz)),
    ("GPU memory", "gpu_memory_bytes", _num(fmt_bytes)),
    ("memory bandwidth", "gpu_memory_bandwidth_bytes_per_s", _num(fmt_rate)),
    ("L2 cache", "gpu_l2_bytes", _num(fmt_bytes)),
    ("PCIe link", "gpu_pcie_link", str),
    ("PCIe bandwidth", "gpu_pcie_bandwidth_bytes_per_s", _num(fmt_rate)),
    ("GPU peak fp32", "gpu_peak_fp32_flops", _num(fmt_flops)),
    ("GPU peak tf32", "gpu_peak_tf32_flops", _num(fmt_flops)),
    ("GPU peak fp16", "gpu_peak_fp16_flops", _num(fmt_flops)),
    ("GPU peak bf16", "gpu_peak_bf16_flops", _num(fmt_flops)),
    ("GPU peak fp64", "gpu_peak_fp64_flops", _num(fmt_flops)),
    ("GPU peak source", "gpu_peak_source", str),
    ("PCI bus id", "gpu_pci_bus_id", str),
    ("CUDA driver", "cuda_driver_version", str),
    ("CUDA runtime", "cuda_runtime_version", str),
    ("cuBLAS", "cublas_version", str),
    ("CPU", "cpu_model", str),
    ("physical cores", "cpu_physical_cores", str),
    ("logical CPUs", "cpu_logical_cpus", str),
    ("ISA", "cpu_isa", str),
    ("CPU clock", "cpu_clock_hz", _num(_hz)),
    ("CPU clock source", "cpu_clock_source", str),
    ("fp32 flop/cycle/core", "cpu_fp32_flop_per_cycle_per_core", str),
    ("CPU peak fp32", "cpu_peak_fp32_flops", _num(fmt_flops)),
    ("CPU peak fp64", "cpu_peak_fp64_flops", _num(fmt_flops)),
    ("caches", "caches", _caches),
    ("OpenBLAS", "openblas_config", str),
    ("OpenBLAS default threads", "openblas_default_threads", str),
    ("host", "host_name", str),
    ("date", "date", str),
    ("suite commit", "gpubench_git_commit", str),
    ("sweep", "gpubench_sweep", str),
    ("built with CUDA", "gpubench_cuda_build", str),
    ("library build type", "library_build_type", str),
    ("executable", "executable", str),
    (
        "load average",
        "load_avg",
        lambda v: ", ".join(f"{x:.2f}" for x in v) if isinstance(v, list) else str(v),
    ),
]


def _context_columns(sources: list[Source]) -> list[tuple[str, dict[str, Any]]]:
    """(header, context) per column: one per machine, and for a run whose GPU rows come from a
    reference run, this run's machine and the reference's side by side."""
    columns = []
    for s in sources:
        ref = s.gpu_reference
        if ref is None:
            columns.append((f"{s.label} ({s.file_names})", s.report.context))
        else:
            cpu, gpu = short_cpu_name(s.cpu_name), short_gpu_name(s.gpu_name or "")
            columns.append((f"this run: {cpu} ({s.file_names})", s.report.context))
            columns.append((f"GPU reference run: {gpu} ({ref.file_names})", ref.context))
    return columns


def context_table(sources: list[Source]) -> Table:
    rows = []
    columns = _context_columns(sources)
    known = {key for _, key, _ in _CONTEXT_ROWS}
    for title, key, fmt in _CONTEXT_ROWS:
        if any(key in ctx for _, ctx in columns):
            rows.append([title] + [fmt(ctx[key]) if key in ctx else "" for _, ctx in columns])
    # Keys added to the context later still show up, so a newer file is never silently trimmed.
    extra = sorted({k for _, ctx in columns for k in ctx} - known)
    for key in extra:
        vals = [ctx.get(key, "") for _, ctx in columns]
        if all(isinstance(v, (str, int, float, bool)) for v in vals):
            rows.append([key] + [str(v) for v in vals])
    return Table(headers=["", *[header for header, _ in columns]], rows=rows)


def _crossover_table(sources: list[Source]) -> Table | None:
    rows = []
    for src in sources:
        for s in speedup_series(src):
            c = s.crossover
            rows.append(
                [
                    f"{src.gpu_label} vs {src.cpu_label}" if src.mixes_machines else src.label,
                    s.variant,
                    s.dtype,
                    crossover_clause(c),
                    f"{s.speedup[0]:.2g}x at n={s.xs[0]:.0f}",
                    f"{s.speedup[-1]:.3g}x at n={s.xs[-1]:.0f}",
                ]
            )
    if not rows:
        return None
    return Table(
        headers=[
            "GPU",
            "variant",
            "precision",
            "crossover (speedup = 1)",
            "smallest size",
            "largest size",
        ],
        rows=rows,
        caption="Crossover sizes, square GEMM (interpolated between measured sizes in log-log space)",
    )


def _model_table(sources: list[Source], models: list[OverheadModel]) -> Table | None:
    rows = []
    for src, m in zip(sources, models):
        for (d, h), f in sorted(
            m.copies.items(), key=lambda kv: (kv[0][1] != "pinned", kv[0][0] != "h2d")
        ):
            rows.append(
                [
                    src.label,
                    f"{d.upper()} copy, {h}",
                    f"alpha = {f.alpha_s * 1e6:.2f} us, beta = {f.beta_bytes_per_s / 1e9:.2f} GB/s",
                    f"half bandwidth at {fmt_bytes(f.half_bandwidth_bytes)}; fit rms error {fmt_pct(f.rms_rel_error)} over {len(f.nbytes)} sizes",
                ]
            )
        for name, v in m.launch.items():
            rows.append([src.label, name, f"{v * 1e6:.2f} us", ""])
    if not rows:
        return None
    return Table(
        headers=["GPU", "constant", "fitted / measured value", "note"],
        rows=rows,
        caption="Overhead-model constants",
    )


def _failed_rows(sources: list[Source]) -> list[tuple[str, str, str, str]]:
    """(file, benchmark, status, message) of every failed, skipped or invalid benchmark."""
    rows = [(f, r.run_name, "failed", r.error or "") for s in sources for f, r in s.failed]
    rows += [(f, r.run_name, "skipped", r.error or "") for s in sources for f, r in s.skipped]
    rows += [(f, r.run_name, "invalid", r.invalid or "") for s in sources for f, r in s.invalid]
    return rows


def _failed_table(sources: list[Source]) -> tuple[Table, list[Details]] | None:
    """One table row per file, status and message: a CPU without cblas_sbgemm skips every bf16
    row with the same long message, which is said once ("18 benchmarks") with the names folded
    into a Details list under the table."""
    groups = group_reasons(_failed_rows(sources), lambda row: (Path(row[0]).name, row[2], row[3]))
    if not groups:
        return None
    rows: list[list[str]] = []
    details: list[Details] = []
    for (file, status, message), failed in groups:
        names = [name for _, name, _, _ in failed]
        if len(names) == 1:
            rows.append([file, names[0], status, message])
            continue
        rows.append([file, f"{len(names)} benchmarks (listed below)", status, message])
        details.append(Details(f"{len(names)} rows {status} in {file}: {_shorten(message)}", names))
    table = Table(
        headers=["file", "benchmark", "status", "message"],
        rows=rows,
        caption=(
            "failed: the benchmark reported an error; skipped: it does not fit on this machine "
            "(the message starts with " + " or ".join(f'"{p}"' for p in SKIP_PREFIXES) + "); "
            "invalid: its values (a NaN, infinite, zero or absurd time or count) cannot be a "
            "measurement"
        ),
    )
    return table, details


def _shorten(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _counted(n: int, skipped: int, failed: int, invalid: int = 0) -> str:
    return (
        f"{n} benchmarks"
        + (f", {skipped} skipped" if skipped else "")
        + (f", {failed} failed" if failed else "")
        + (f", {invalid} invalid" if invalid else "")
    )


def _input_text(s: Source) -> str:
    ref = s.gpu_reference
    if ref is None:
        return (
            f"{s.file_names} ({s.label}"
            + (f" with {s.cpu_label}" if s.gpu_name else ", CPU only")
            + f", {_counted(len(s.points), len(s.skipped), len(s.failed), len(s.invalid))}"
            + (f", {len(s.paths)} files from one machine, merged" if len(s.paths) > 1 else "")
            + ")"
        )

    # Rows, skipped and failed benchmarks counted on the side they belong to.
    def mine(rows: list[tuple[str, Any]]) -> int:
        return sum(1 for f, _ in rows if f in s.paths)

    gpu = sum(1 for p in s.points if p.is_gpu)
    return (
        f"{s.file_names} ({s.cpu_label}, CPU only, "
        f"{_counted(len(s.points) - gpu, mine(s.skipped), mine(s.failed))}), with the GPU rows "
        f"of the reference run {ref.file_names} ({s.gpu_label}, "
        f"{_counted(gpu, len(s.skipped) - mine(s.skipped), len(s.failed) - mine(s.failed))}, "
        f"{ref.provenance()})"
    )


def _intro(sources: list[Source]) -> list[str]:
    return ["Inputs: " + "; ".join(_input_text(s) for s in sources) + "."]


def _summary_section(sources: list[Source], models: list[OverheadModel]) -> Section:
    """The first sentence of each topic, per machine."""
    summary: list[str] = []
    for src, model in zip(sources, models):
        summary += whose_numbers_sentences(src)
        summary += speedup_sentences(src)[:1]
        if not src.has_gpu:
            summary += [t for t in utilisation_sentences(src)[:1] if t not in summary]
        if mlp_points(src):
            summary += mlp_sentences(src, model)[:1]
        if cnn_points(src):
            summary += cnn_sentences(src)[:2]
        if precision_pairs(src):
            summary += precision_sentences(src)[:1]
    return Section("Summary", paragraphs=summary)


def _hardware_section(sources: list[Source]) -> Section:
    hardware = Section("Hardware and software", tables=[context_table(sources)])
    for src in sources:
        if len(src.paths) > 1:
            hardware.notes.append(
                f"{src.file_names} record the same hardware ({src.label}) and are reported as one "
                f"machine; the context shown is that of {Path(src.paths[0]).name}."
            )
        ref = src.gpu_reference
        if ref is not None and len(ref.paths) > 1:
            hardware.notes.append(
                f"{ref.file_names} record the same hardware and are reported as one reference "
                f"run; the context shown is that of {Path(ref.paths[0]).name}."
            )
    return hardware


def _speedup_section(sources: list[Source], out: Path) -> Section:
    sec = Section("1. Speedup: GPU against CPU (matrix multiplication)")
    sec.notes.append(
        "CPU reference for each shape: the fastest CPU fp32 run over the thread counts measured; "
        "fp64 GPU runs compare with CPU fp64 where it was measured. Speedup = CPU time / GPU time "
        "(medians over repetitions; bands and error bars span min..max). Kernel-only times are "
        "CUDA-event times of the GEMM with operands on the device; end-to-end times are host wall "
        "clock around copies in, GEMM, copy out and synchronisation. Crossovers are interpolated "
        "between measured sizes, linearly in log(size) and log(speedup)."
    )
    sec.notes += mixed_note(
        sources,
        "CPU times are this run's ({cpu}); GPU times are the reference run's ({gpu}), measured "
        "{elsewhere}. Each speedup divides one run's time by the other's.",
    )
    for src in sources:
        sec.paragraphs += speedup_sentences(src)
    sec.charts = keep_charts(
        cm.chart_matmul_time(sources, out),
        cm.chart_speedup_square(sources, out),
        cm.chart_speedup_shapes(sources, out),
    )
    table = _crossover_table(sources)
    if table:
        sec.tables.append(table)
    return sec


def _breakdown_section(sources: list[Source], models: list[OverheadModel], out: Path) -> Section:
    sec = Section("2. Where the GPU time goes (end to end)")
    for src, model in zip(sources, models):
        sec.paragraphs += breakdown_sentences(src)
        if src.has_gpu:
            sec.charts += keep_charts(cm.chart_breakdown(src, model, out))
    sec.notes.append(
        "Phases are CUDA-event times of each step of one iteration; t_overhead = t_wall - "
        "(t_h2d + t_compute + t_d2h) is launch, API and synchronisation cost. The dashed line "
        "is the overhead model of section 4."
    )
    sec.notes += mixed_note(sources, "Every number in this section is the reference run's ({gpu}).")
    return sec


def _utilisation_section(sources: list[Source], out: Path) -> Section:
    sec = Section("3. Utilisation")
    for src in sources:
        sec.paragraphs += utilisation_sentences(src)
    if not sec.paragraphs:
        sec.paragraphs.append("No matrix-multiplication rows with pct_peak in the input files.")
    sec.charts = keep_charts(cm.chart_utilisation(sources, out))
    sec.notes.append(
        "pct_peak: achieved FLOP/s as a percentage of the theoretical peak for that precision (CPU: of the cores the run used; GPU: table by compute capability, see the context)."
    )
    sec.notes += mixed_note(
        sources,
        "The CPU panel is this run's ({cpu}); the GPU panel is the reference run's ({gpu}).",
    )
    return sec


def _overhead_section(sources: list[Source], models: list[OverheadModel], out: Path) -> Section:
    sec = Section("4. The overhead model")
    sec.notes.append(
        "T_copy(bytes) = alpha + bytes / beta is fitted to the transfer probes by least squares on "
        "the relative error (so 4-byte and 1 GiB copies weigh the same), with alpha, beta >= 0. "
        "t_launch is the slope of burst time over kernel count; t_sync is the stream-synchronise "
        "probe. T_gpu = T_h2d + flop / (u * peak) + T_d2h + kernels * t_launch + t_sync, "
        "with u from the kernel-only run of the same GEMM. Each copy call pays alpha once: "
        "T_h2d = copies_h2d * alpha + bytes_h2d / beta and T_d2h = copies_d2h * alpha + "
        "bytes_d2h / beta, where the end-to-end GEMM makes 2 host-to-device copies (A and B) and "
        "1 device-to-host copy (C); files without the copies_h2d / copies_d2h counters count one "
        "copy per direction."
    )
    sec.notes += mixed_note(
        sources, "The probes and the model are the reference run's ({gpu}), not this machine's."
    )
    for src, model in zip(sources, models):
        sec.paragraphs += overhead_sentences(src, model)
    gpu_pairs = [(s, m) for s, m in zip(sources, models) if s.has_gpu]
    if gpu_pairs:
        gs, gm = [s for s, _ in gpu_pairs], [m for _, m in gpu_pairs]
        sec.charts = keep_charts(
            co.chart_copies(gs, gm, out), co.chart_launch(gs, gm, out), co.chart_model(gs, gm, out)
        )
        table = _model_table(gs, gm)
        if table:
            sec.tables.append(table)
    return sec


def _mlp_section(sources: list[Source], models: list[OverheadModel], out: Path) -> Section:
    sec = Section("5. Tiny-MLP training")
    has_mlp = [s for s in sources if mlp_points(s)]
    if not has_mlp:
        sec.paragraphs.append("No MLP data in the input files (run the mlp/ benchmarks to add it).")
        return sec
    for src, model in zip(sources, models):
        sec.paragraphs += mlp_sentences(src, model)
    sec.charts = keep_charts(cmlp.chart_iris(has_mlp, out), cmlp.chart_epoch_time(has_mlp, out))
    sec.charts += keep_charts(*[cmlp.chart_heatmap(s, out) for s in has_mlp if s.has_gpu])
    sec.charts += keep_charts(cmlp.chart_readback(has_mlp, out))
    sec.notes.append(
        "t_epoch is the time of one training epoch; GPU launches per step come from the kernels "
        "counter; the share of an epoch spent launching is launches x t_launch (section 4) / t_epoch. "
        "Charts show nets with one hidden layer. GPU bars and lines use the runs that never read "
        "the loss back where those exist (the CPU paths always have it on the host); the "
        "heatmap compares each GPU path with the fastest CPU run of the same batch and width "
        "('-': no run of that GPU path, or no CPU run, for that cell)."
    )
    sec.notes += mixed_note(
        sources,
        "CPU paths are this run's ({cpu}); GPU paths are the reference run's ({gpu}), measured "
        "{elsewhere}, and the launch share uses the reference's launch probes.",
    )
    return sec


def _cnn_crossover_table(sources: list[Source]) -> Table | None:
    rows = []
    for src in sources:
        pts = cnn_points(src)
        for c in cnn_crossovers(cnn_lines(pts, cnn_data_set(pts))):
            x = c.crossover
            if x.kind == "cross" and x.x is not None:
                verdict = f"batch ~{fmt_size(round(x.x))} (between {x.x_lo:.0f} and {x.x_hi:.0f})"
            elif x.kind == "always_faster":
                verdict = "GPU faster at every batch measured"
            else:
                verdict = "never (CPU faster at every batch measured)"
            label = f"{src.gpu_label} vs {src.cpu_label}" if src.mixes_machines else src.label
            rows.append(
                [
                    label,
                    c.name,
                    verdict,
                    f"{fmt_ratio(c.speedup[0])} at batch {c.batches[0]}",
                    f"{fmt_ratio(c.speedup[-1])} at batch {c.batches[-1]}",
                ]
            )
    if not rows:
        return None
    return Table(
        headers=["machine", "GPU path", "GPU step faster from", "smallest batch", "largest batch"],
        rows=rows,
        caption=(
            "CNN crossover: best CPU step / GPU step per batch (above 1x the GPU is faster), "
            "interpolated in log-log space"
        ),
    )


def _cnn_profile_table(sources: list[Source]) -> Table | None:
    rows = []
    for src in sources:
        pts = cnn_points(src)
        data = cnn_data_set(pts)
        batch = profile_batch(pts, data)
        if batch is None:
            continue
        for m in profiles_at(pts, data, batch):
            shares = kind_shares(m)
            side = src.gpu_label if m.backend == "gpu" else src.cpu_label
            rows.append(
                [side, m.name, str(batch), fmt_time(m.profiled_step), fmt_time(m.t_step)]
                + [fmt_pct(shares[k]) if shares[k] > 0 else "" for k in OP_KINDS]
            )
    if not rows:
        return None
    return Table(
        headers=["machine", "path", "batch", "profiled step", "t_step", *OP_KINDS],
        rows=rows,
        caption="Share of one profiled CNN training step by kind of operation",
    )


def _cnn_section(sources: list[Source], out: Path) -> Section:
    sec = Section("6. CNN training (CIFAR-10 tutorial network)")
    has_cnn = [s for s in sources if cnn_points(s)]
    if not has_cnn:
        sec.paragraphs.append("No CNN data in the input files (run the cnn/ benchmarks to add it).")
        return sec
    for src in has_cnn:
        sec.paragraphs += cnn_sentences(src)
    sec.charts = keep_charts(
        ccnn.chart_cnn_steps(has_cnn, out), ccnn.chart_cnn_breakdown(has_cnn, out)
    )
    sec.tables += [t for t in (_cnn_crossover_table(has_cnn), _cnn_profile_table(has_cnn)) if t]
    sec.notes.append(
        "t_step is the time of one SGD step in the timed loop (the GPU paths never read the loss "
        "back where such runs exist; PyTorch, tools/reference/torch_cnn.py, reads it every step "
        "and is drawn for comparison only). The crossover compares each GPU path with the best "
        "of the suite's CPU runs (OpenBLAS, over the thread counts) at each batch and is "
        "interpolated in log(batch) and log(ratio) at the last upward crossing, like the GEMM "
        "crossovers. Per-operation times come from a separate profiled run of the same step "
        "(t_op:<operation> counters: the host clock around each operation on the CPU, CUDA "
        "events on the GPU; launch gaps are the time the GPU waits between the eager path's "
        "operations); shares are of the profiled step, the sum of its operations, which can "
        "differ from t_step. GEMM includes the convolutions' products (with col2im in the input "
        "gradient) and the linear layers (with their bias)."
    )
    sec.notes += mixed_note(
        sources,
        "CPU paths are this run's ({cpu}); GPU paths are the reference run's ({gpu}), measured "
        "{elsewhere}.",
    )
    return sec


def _failed_section(sources: list[Source]) -> Section | None:
    found = _failed_table(sources)
    if found is None:
        return None
    table, details = found
    return Section("Failed or skipped benchmarks", tables=[table], details=details)


def build_document(sources: list[Source], out: Path, warnings: list[str]) -> Document:
    """The whole report: summary, hardware, the eight topics, then what did not run."""
    models = [build_model(s) for s in sources]
    sections = [
        _summary_section(sources, models),
        _hardware_section(sources),
        _speedup_section(sources, out),
        _breakdown_section(sources, models, out),
        _utilisation_section(sources, out),
        _overhead_section(sources, models, out),
        _mlp_section(sources, models, out),
        _cnn_section(sources, out),
        precision_section(sources, out, "7. Mixed precision: bf16 and fp16 against fp32"),
        memory_section(sources, out, "8. Device memory and allocation cost"),
    ]
    failed = _failed_section(sources)
    if failed is not None:
        sections.append(failed)
    if not any(s.has_gpu for s in sources):
        warnings = warnings + [
            "no GPU data in any input: GPU charts are omitted (--gpu-reference FILE... adds the "
            "GPU rows of a reference run from another machine)"
        ]
    for src in sources:
        note = reference_warning(src)
        if note is not None:
            warnings = [note] + warnings
    return Document(
        title="gpubench report", intro=_intro(sources), warnings=warnings, sections=sections
    )
