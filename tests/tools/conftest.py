"""Shared helpers for the tool tests: paths, a Google-Benchmark-shaped row builder, and one
report generated per session from the H100 fixture (charts are slow enough to share)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def gb_row(
    name: str,
    time_s: float,
    counters: dict[str, float] | None = None,
    label: str = "",
    *,
    unit: str = "us",
    run_type: str = "iteration",
    repetition_index: int = 0,
    repetitions: int = 1,
    aggregate_name: str | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """A row the way Google Benchmark 1.7.1 writes it, with the time given in seconds."""
    scale = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}[unit]
    row: dict[str, Any] = {
        "name": name if aggregate_name is None else f"{name}_{aggregate_name}",
        "family_index": 0,
        "per_family_instance_index": 0,
        "run_name": name,
        "run_type": run_type,
        "repetitions": repetitions,
        "threads": 1,
        "iterations": 0 if error else 100,
        "real_time": time_s * scale,
        "cpu_time": time_s * scale,
        "time_unit": unit,
    }
    if run_type == "iteration":
        row["repetition_index"] = repetition_index
    if aggregate_name is not None:
        row["aggregate_name"] = aggregate_name
        row["aggregate_unit"] = "percentage" if aggregate_name == "cv" else "time"
    if error is not None:
        row["error_occurred"] = True
        row["error_message"] = error
    row.update(counters or {})
    row["label"] = label
    return row


def write_bench_json(
    path: Path, rows: list[dict[str, Any]], context: dict[str, Any] | None = None
) -> Path:
    ctx = {"cpu_model": "Test CPU", "gpu": "none"} if context is None else context
    path.write_text(json.dumps({"context": ctx, "benchmarks": rows}, indent=1))
    return path


GPU_CONTEXT: dict[str, Any] = {
    "cpu_model": "Test CPU",
    "gpu": "NVIDIA Test GPU",
    "gpu_sm_count": "100",
    "gpu_peak_fp32_flops": "5e+13",
    "gpu_peak_bf16_flops": "1e+15",
}


def _report_run(factory: pytest.TempPathFactory, name: str, args: list[str]) -> dict[str, Any]:
    """The report command run in-process on `args` (--out a new folder): its exit code, output
    folder, stdout and stderr, and the document it built before writing the pages (a copy taken as
    build_document returned it; None where it built none or several), so that a test of the
    document reads the one the command drew the charts for instead of drawing them again."""
    import contextlib
    import copy
    import io

    from gpubench_tools.report import build, main

    built: list[dict[str, Any]] = []
    build_document = build.build_document

    def keep(*args: Any, **kwargs: Any) -> dict[str, Any]:
        doc = build_document(*args, **kwargs)
        built.append(copy.deepcopy(doc))
        return doc

    out = factory.mktemp(name)
    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        patch.setattr(build, "build_document", keep)
        code = main([*args, "--out", str(out)])
    return {
        "code": code,
        "out": out,
        "stdout": stdout.getvalue(),
        "stderr": stderr.getvalue(),
        "doc": built[0] if len(built) == 1 else None,
    }


@pytest.fixture(scope="session")
def h100_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run the report once on the H100 fixture; tests inspect what it wrote."""
    return _report_run(tmp_path_factory, "h100_report", [str(FIXTURES / "h100.json")])


BASELINES = REPO / "reports" / "baselines"
# The committed GPU reference a CPU-only run is reported with, and the CPU-only fixture.
REFERENCE = [
    str(BASELINES / "h100-80gb-hbm3-matmul.json"),
    str(BASELINES / "h100-80gb-hbm3-mlp.json"),
]
COMMITTED = sorted(str(p) for p in BASELINES.glob("h100-80gb-hbm3-*.json"))
CPU_RUN = str(FIXTURES / "cpu_only.json")


def _document(
    factory: pytest.TempPathFactory, name: str, inputs: list[str], reference: list[str] = ()
) -> dict[str, Any]:
    from gpubench_tools.report.build import build_document
    from gpubench_tools.table import load_table

    return build_document(load_table(inputs, reference), factory.mktemp(name))


# The report documents several modules read: each built once per session (charts are slow).
@pytest.fixture(scope="session")
def reference_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The report document of the GPU reference alone."""
    return _document(tmp_path_factory, "reference", REFERENCE)


@pytest.fixture(scope="session")
def mixed_doc(
    mixed_report: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The report document of the CPU-only fixture with the GPU reference: the one the report
    command of `mixed_report` built from the same inputs (built again only where that command no
    longer goes through build_document)."""
    if mixed_report["doc"] is not None:
        return mixed_report["doc"]
    return _document(tmp_path_factory, "mixed", [CPU_RUN], REFERENCE)


@pytest.fixture(scope="session")
def committed_doc(
    committed_report: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The report document of every committed H100 file: the one `committed_report` built (built
    again only where the command no longer goes through build_document)."""
    if committed_report["doc"] is not None:
        return committed_report["doc"]
    return _document(tmp_path_factory, "committed", COMMITTED)


@pytest.fixture(scope="session")
def committed_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The report command run once on every committed H100 file (_report_run)."""
    return _report_run(tmp_path_factory, "committed_report", COMMITTED)


@pytest.fixture(scope="session")
def mixed_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The report command run once on the CPU-only fixture with the GPU reference (_report_run);
    mixed_doc reads its document."""
    return _report_run(tmp_path_factory, "mixed_report", [CPU_RUN, "--gpu-reference", *REFERENCE])


def bench_binary() -> Path:
    return Path(os.environ.get("GPUBENCH_BENCH", REPO / "build" / "benchmarks" / "bench"))


@pytest.fixture(scope="session")
def cpu_bench_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real CPU-only run of the built bench, shared by the end-to-end tests: small GEMM
    sizes and the Iris MLP, three repetitions each, no GPU visible. Skips where bench is not
    built."""
    import subprocess

    bench = bench_binary()
    if not (bench.is_file() and os.access(bench, os.X_OK)):
        pytest.skip(f"bench binary not found at {bench} (build it, or set GPUBENCH_BENCH)")
    run = tmp_path_factory.mktemp("cpu_bench_run") / "bench.json"
    proc = subprocess.run(
        [
            str(bench),
            "--benchmark_filter=matmul/cpu/openblas/dtype:fp32/m:(16|64|256)/n:[0-9]+/k:[0-9]+/"
            "|mlp/cpu/small/data:iris",
            "--benchmark_min_time=0.01",
            "--benchmark_repetitions=3",
            f"--benchmark_out={run}",
            "--benchmark_out_format=json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return run


def run_tool(
    capsys: pytest.CaptureFixture[str], main: Callable[[list[str]], int], *args: str
) -> tuple[int, str, str]:
    """A tool's main in-process: (exit code, stdout, stderr); argparse's SystemExit is its code
    (2 where it carries none), and a traceback on stderr fails the test (the contract: one line)."""
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


def examples(n: int) -> settings:
    """Hypothesis settings for the tools' property tests: `n` examples, no deadline (a report
    draws charts), the same examples on every run."""
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        derandomize=True,
        database=None,
    )


def caught_parser(script: Path, imports_beside: bool = False) -> argparse.ArgumentParser:
    """The argparse parser `script`'s main() builds inline, caught as main() parses (nothing past
    the parse runs). imports_beside: the script imports modules of its own folder."""
    name = f"caught_{script.stem.replace('-', '_')}"
    if imports_beside:
        sys.path.insert(0, str(script.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        if imports_beside:
            sys.path.remove(str(script.parent))
    caught: list[argparse.ArgumentParser] = []

    class Caught(Exception):
        pass

    def grab(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        caught.append(self)
        raise Caught

    original = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = grab  # type: ignore[method-assign]
    try:
        module.main()
    except Caught:
        pass
    finally:
        argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]
    return caught[0]
