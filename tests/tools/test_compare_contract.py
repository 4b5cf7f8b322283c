"""The compare tool's contract: exit codes under any input, missing benchmarks, too few samples,
one set of default thresholds however the tool is run, grouped reasons, and Markdown that data
cannot inject into.

The assertions check exit codes, numbers (the --json output) and the structure of the output
(line counts, which lines exist), not the wording of its sentences.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import gb_row

from gpubench_tools import benchjson, compare
from gpubench_tools.benchjson import load_report
from gpubench_tools.compare import config as config_module
from gpubench_tools.compare.stats import Thresholds, compare_metric

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
BASELINE = ROOT / "reports" / "baselines" / "ci-cpu.json"
CI_CONFIG = ROOT / "reports" / "baselines" / "ci-cpu.thresholds.json"
QUICKSTART = Path(__file__).parent / "compare_fixtures" / "cpu_quickstart.json"

CONTEXT: dict[str, Any] = {"cpu_model": "Test CPU", "gpu": "none", "gpubench_git_commit": "abc"}
MLP = "mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:1/threads:{t}"
GEMM = "matmul/cpu/openblas/dtype:fp32/m:{m}/n:{m}/k:{m}/threads:1"


def reps(name: str, times_s: list[float], **counters: list[float]) -> list[dict[str, Any]]:
    """The repetition rows of one benchmark (Google Benchmark's layout, no aggregates)."""
    return [
        gb_row(
            name,
            t,
            {k: v[i] for k, v in counters.items()},
            "workload=test",
            unit="s",  # so that 1e308 s is written as 1e308, not as an overflowing 1e314 us
            repetition_index=i,
            repetitions=len(times_s),
        )
        for i, t in enumerate(times_s)
    ]


def spread(center: float, n: int = 9, step: float = 0.002) -> list[float]:
    """n distinct times around center (a 0.2 % step): a quiet, judgeable sample."""
    return [center * (1.0 + step * (i - n // 2)) for i in range(n)]


def write(path: Path, rows: list[dict[str, Any]], context: dict[str, Any] | None = None) -> str:
    # json.dumps writes NaN and Infinity literally, as Google Benchmark does.
    path.write_text(json.dumps({"context": context or CONTEXT, "benchmarks": rows}))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = compare.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str
) -> tuple[int, str, str, dict[str, Any]]:
    js = tmp_path / "result.json"
    code, out, err = run(capsys, *args, "--json", str(js))
    return code, out, err, json.loads(js.read_text())


def failure_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("REGRESSION")]


def baseline_doc() -> dict[str, Any]:
    return json.loads(BASELINE.read_text())


def iteration_names(doc: dict[str, Any]) -> list[str]:
    return sorted({r["run_name"] for r in doc["benchmarks"] if r["run_type"] == "iteration"})


# --- 1. exit codes under any input ---------------------------------------------------------------


def test_nan_counter_in_the_contender_fails_that_benchmark_not_the_tool(tmp_path, capsys) -> None:
    # A diverged final_loss: Google Benchmark writes the literal NaN.
    name = MLP.format(t=1)
    base = write(tmp_path / "b.json", reps(name, spread(1e-3), final_loss=[0.1] * 9))
    cont = write(tmp_path / "c.json", reps(name, spread(1e-3), final_loss=[math.nan] * 9))
    assert "NaN" in Path(cont).read_text()
    code, out, err, doc = run_json(capsys, tmp_path, base, cont, "--counters", "final_loss")
    assert (code, err) == (1, "")
    assert len(failure_lines(out)) == 1 and name in failure_lines(out)[0]
    (bench,) = doc["benchmarks"]
    verdicts = {m["metric"]: m["verdict"] for m in bench["metrics"]}
    assert verdicts == {"time": "same", "final_loss": "invalid"}
    assert bench["metrics"][1]["invalid_values"] == {"baseline": 0, "contender": 9}
    # Not a compared counter: not looked at, nothing fails.
    code, _, err = run(capsys, base, cont, "--counters", "")
    assert (code, err) == (0, "")


@pytest.mark.parametrize("bad", [math.inf, math.nan, 1e308, 0.0, -2e-3])
def test_a_time_that_is_no_measurement_fails_that_benchmark(bad, tmp_path, capsys) -> None:
    names = [MLP.format(t=1), MLP.format(t=2)]
    base_rows = reps(names[0], spread(1e-3)) + reps(names[1], spread(2e-3))
    cont_rows = reps(names[0], spread(1e-3)) + reps(names[1], [bad] + spread(2e-3)[1:])
    base, cont = write(tmp_path / "b.json", base_rows), write(tmp_path / "c.json", cont_rows)
    code, out, err, doc = run_json(capsys, tmp_path, base, cont)
    assert (code, err) == (1, "")
    (line,) = failure_lines(out)
    assert names[1] in line and names[0] not in line
    verdicts = {b["name"]: (b["verdict"], b["fails"]) for b in doc["benchmarks"]}
    assert verdicts == {names[0]: ("same", False), names[1]: ("invalid", True)}


def test_invalid_times_on_both_sides_are_left_out_and_said(tmp_path, capsys) -> None:
    name = MLP.format(t=1)
    base_rows = reps(name, [math.nan, 0.0] + spread(1e-3, n=7))
    cont_rows = reps(name, [math.inf] + spread(1e-3, n=8))
    base, cont = write(tmp_path / "b.json", base_rows), write(tmp_path / "c.json", cont_rows)
    code, out, err, doc = run_json(capsys, tmp_path, base, cont)
    assert (code, err) == (0, "")
    time = doc["benchmarks"][0]["metrics"][0]
    assert (time["baseline"]["n"], time["contender"]["n"]) == (7, 8)
    warnings = [w for w in doc["warnings"] if not w.startswith("conditions unknown")]
    assert time["verdict"] == "same" and len(warnings) == 1
    assert any("left out" in note for note in time["notes"])


def test_absurd_counters_never_crash_the_statistics() -> None:
    for values in ([math.nan] * 3, [math.inf, -math.inf, 1.0], [1e308, 1e308, -1e308, 5.0]):
        result = compare_metric(
            "FLOP/s", "higher", [1e9, 1.1e9, 1.2e9, 1e9], values, Thresholds(1.05, 0.05, 0.1, False)
        )
        assert result.verdict == "invalid" and result.fails


def test_an_unexpected_error_is_exit_2_in_one_line(tmp_path, capsys, monkeypatch) -> None:
    name = MLP.format(t=1)
    base = write(tmp_path / "b.json", reps(name, spread(1e-3)))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr("gpubench_tools.compare.cli.compare_reports", broken)
    md = tmp_path / "o.md"
    code, out, err = run(capsys, base, base, "--markdown", str(md))
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "ZeroDivisionError" in err and base in err
    assert "Traceback" not in err
    assert md.read_text().count("ZeroDivisionError") == 1  # the PR comment says it too
    code, _, err = run(capsys, base, base, "--debug")
    assert code == 2 and "Traceback" in err


def test_usage_errors_are_exit_2(tmp_path, capsys) -> None:
    name = MLP.format(t=1)
    base = write(tmp_path / "b.json", reps(name, spread(1e-3)))
    for bad in (["--max-ratio", "0.5"], ["--alpha", "2"], ["--max-cv", "nan"]):
        with pytest.raises(SystemExit) as exit_info:
            compare.main([base, base, *bad])
        out, err = capsys.readouterr()
        assert exit_info.value.code == 2 and out == "" and len(err.splitlines()) == 1
        assert bad[0] in err and repr(bad[1]) in err
    with pytest.raises(SystemExit) as exit_info:
        compare.main([base])
    assert exit_info.value.code == 2
    capsys.readouterr()


# --- 2. missing benchmarks fail by default -----------------------------------------------------


def test_truncated_contender_fails(tmp_path, capsys) -> None:
    doc = baseline_doc()
    iterations = [r for r in doc["benchmarks"] if r["run_type"] == "iteration"]
    assert len(iterations) == 45
    kept = iterations[:19]
    text = json.dumps({"context": doc["context"], "benchmarks": kept}, indent=1)
    # Cut inside the next row, as an interrupted writer leaves the file.
    text = text[: text.rstrip().rfind("]")].rstrip() + ',\n  {"name": "matmul/cpu/op'
    cont = tmp_path / "truncated.json"
    cont.write_text(text)
    assert len(load_report(str(cont)).rows) == 19
    missing = sorted(set(iteration_names(doc)) - {r["run_name"] for r in kept})
    assert missing
    code, out, _, result = run_json(
        capsys, tmp_path, str(BASELINE), str(cont), "--config", str(CI_CONFIG)
    )
    assert code == 1 and sorted(result["only_in_baseline"]) == missing
    assert all(f"  {name}" in out.splitlines() for name in missing)


def test_one_of_five_benchmarks_fails_unless_allowed(tmp_path, capsys) -> None:
    doc = baseline_doc()
    names = iteration_names(doc)
    assert len(names) == 5
    one = copy.deepcopy(doc)
    one["benchmarks"] = [r for r in doc["benchmarks"] if r["run_name"] == names[0]]
    cont = write(tmp_path / "one.json", one["benchmarks"], doc["context"])
    args = (str(BASELINE), cont, "--config", str(CI_CONFIG))
    code, _, _, result = run_json(capsys, tmp_path, *args)
    assert code == 1
    assert result["summary"]["only_in_baseline"] == 4 and result["summary"]["failing"] == 0
    code, _, _, result = run_json(capsys, tmp_path, *args, "--allow-missing")
    assert code == 0 and result["summary"]["judged"] == 1
    code, _, _ = run(capsys, *args, "--fail-on-missing")  # the old flag: a no-op
    assert code == 1


def test_all_errored_contender_is_a_failure_with_one_grouped_reason(tmp_path, capsys) -> None:
    # Under the CI gate's config, whose normalisation reference then matches nothing measured.
    doc = baseline_doc()
    message = "OpenBLAS: result differs from the reference beyond tolerance (max error 3.1e+00)"
    rows = [
        gb_row(name, 0.0, error=message, repetition_index=i, repetitions=9)
        for name in iteration_names(doc)
        for i in range(9)
    ]
    cont = write(tmp_path / "errors.json", rows, doc["context"])
    code, out, err, result = run_json(
        capsys, tmp_path, str(BASELINE), cont, "--config", str(CI_CONFIG)
    )
    assert (code, err) == (1, "")
    assert result["summary"]["failed"] == 5 and result["summary"]["failing"] == 5
    assert sum(message in line for line in out.splitlines()) == 2  # the failure and the gate
    (gate,) = [line for line in out.splitlines() if line.startswith("gate:")]
    assert message in gate and "5" in gate
    assert all(f"  {name}" in out.splitlines() for name in iteration_names(doc))


# --- 3. not enough samples is said, never judged -----------------------------------------------


def five_single_samples(tmp_path: Path, ratios: list[float]) -> tuple[str, str]:
    base_rows, cont_rows = [], []
    for i, ratio in enumerate(ratios):
        name = GEMM.format(m=64 * (i + 1))
        base_rows += reps(name, [1e-3])
        cont_rows += reps(name, [1e-3 * ratio])
    return write(tmp_path / "b.json", base_rows), write(tmp_path / "c.json", cont_rows)


@pytest.mark.parametrize("ratios", [[0.87, 0.95, 1.0, 1.05, 1.14], [3.2, 1.0, 1.0, 1.0, 1.0]])
def test_single_samples_cannot_be_judged_exit_2(ratios, tmp_path, capsys) -> None:
    base, cont = five_single_samples(tmp_path, ratios)
    code, out, err, doc = run_json(capsys, tmp_path, base, cont)
    assert code == 2 and doc["exit_code"] == 2
    assert {b["verdict"] for b in doc["benchmarks"]} == {"few"}
    assert doc["summary"]["judged"] == 0 and doc["summary"]["not_enough_samples"] == 5
    assert doc["repetitions_needed"] == 4  # alpha 0.05: 4 a side reach p = 0.029
    assert [b["repetitions_needed"] for b in doc["benchmarks"]] == [4] * 5
    assert len(err.splitlines()) == 1 and "--benchmark_repetitions=4" in err
    assert "REGRESSION" not in out


def test_unjudged_beside_judged_are_one_grouped_line(tmp_path, capsys) -> None:
    judged = [GEMM.format(m=m) for m in (64, 128, 256)]
    few = [GEMM.format(m=m) for m in (512, 1024)]
    base_rows = [r for n in judged for r in reps(n, spread(1e-3, n=7))]
    base_rows += [r for n in few for r in reps(n, [1e-3])]
    base = write(tmp_path / "b.json", base_rows)
    code, out, err, doc = run_json(capsys, tmp_path, base, base)
    assert (code, err) == (0, "")
    assert doc["summary"]["judged"] == 3 and doc["summary"]["not_enough_samples"] == 2
    assert sum("--benchmark_repetitions=4" in line for line in out.splitlines()) == 1
    code, quiet, _ = run(capsys, base, base, "--quiet")
    assert code == 0 and len(quiet.splitlines()) == 1
    code, verbose, _ = run(capsys, base, base, "--verbose")
    assert all(f"  {name}" in verbose.splitlines() for name in few)


def test_a_slowdown_with_few_samples_is_not_judged_beside_judged_ones(tmp_path, capsys) -> None:
    # 3 vs 3 (the U test cannot go below p = 0.1) 2x slower: not judged, and not a pass of it.
    base_rows = reps(GEMM.format(m=64), spread(1e-3)) + reps(GEMM.format(m=512), spread(1e-2, 3))
    cont_rows = reps(GEMM.format(m=64), spread(1e-3)) + reps(GEMM.format(m=512), spread(2e-2, 3))
    base, cont = write(tmp_path / "b.json", base_rows), write(tmp_path / "c.json", cont_rows)
    code, _, _, doc = run_json(capsys, tmp_path, base, cont)
    assert code == 0
    verdicts = {b["name"]: b["verdict"] for b in doc["benchmarks"]}
    assert verdicts == {GEMM.format(m=64): "same", GEMM.format(m=512): "few"}
    assert doc["summary"]["judged"] == 1


# --- 4. one behaviour however it is called -----------------------------------------------------


def test_the_defaults_are_the_packaged_file_and_nothing_else(monkeypatch) -> None:
    packaged = TOOLS / "gpubench_tools" / "compare" / config_module.DEFAULT_CONFIG_RESOURCE
    assert compare.default_config_text() == packaged.read_text(encoding="utf-8")
    assert not (TOOLS / "compare-thresholds.json").exists()
    loaded = compare.load_config(None)
    doc = json.loads(packaged.read_text())
    assert dataclasses.asdict(loaded.thresholds) == doc["thresholds"]
    assert loaded.counters == doc["counters"] and loaded.exact_counters == doc["exact_counters"]
    assert [o.pattern.pattern for o in loaded.overrides] == [o["pattern"] for o in doc["overrides"]]
    # No second copy: a bare CompareConfig is the packaged one, Thresholds has no defaults.
    assert compare.CompareConfig().as_dict() == loaded.as_dict()
    assert all(f.default is dataclasses.MISSING for f in dataclasses.fields(Thresholds))
    # And no fallback: without the packaged file's values there is no configuration at all.
    monkeypatch.setattr(config_module, "default_config_text", lambda: "{}")
    config_module._packaged_config.cache_clear()
    try:
        with pytest.raises(compare.ConfigError):
            compare.load_config(None)
        with pytest.raises(compare.ConfigError):
            compare.CompareConfig()
    finally:
        monkeypatch.undo()
        config_module._packaged_config.cache_clear()


def test_a_config_file_is_read_over_the_packaged_defaults(tmp_path) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"thresholds": {"max_ratio": 1.5}, "counters": []}))
    config = compare.load_config(str(cfg))
    defaults = compare.default_config()
    assert config.thresholds.max_ratio == 1.5
    assert config.thresholds.alpha == defaults.thresholds.alpha
    assert config.exact_counters == defaults.exact_counters and config.counters == []
    assert config.overrides == [] and config.normalize is None  # a file's own


def test_pyproject_ships_the_defaults_as_package_data() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((TOOLS / "pyproject.toml").read_text())
    data = project["tool"]["setuptools"]["package-data"]["gpubench_tools.compare"]
    assert config_module.DEFAULT_CONFIG_RESOURCE in data
    assert project["project"]["scripts"]["gpubench-compare"] == "gpubench_tools.compare:main"


def _pair_for_invocations(tmp_path: Path) -> tuple[str, str]:
    # Decided differently by the packaged defaults than by bare thresholds: an override
    # (^matmul/cpu/: 10 %) keeps an 8 % slowdown of a CPU GEMM "same"; bytes_h2d is exact.
    base_rows = reps(GEMM.format(m=64), spread(1e-3), bytes_h2d=[1.0] * 9)
    cont_rows = reps(GEMM.format(m=64), spread(1.08e-3), bytes_h2d=[1.0] * 9)
    return write(tmp_path / "b.json", base_rows), write(tmp_path / "c.json", cont_rows)


def _invoke(argv: list[str], pythonpath: str, out: Path) -> tuple[int, str, dict[str, Any]]:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    proc = subprocess.run(
        argv + ["--json", str(out)], capture_output=True, text=True, env=env, timeout=120
    )
    return proc.returncode, proc.stderr, json.loads(out.read_text())


def _console_script(bin_dir: Path) -> Path:
    """What an installer writes for [project.scripts] gpubench-compare."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "gpubench-compare"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom gpubench_tools.compare import main\n"
        "sys.exit(main())\n"
    )
    script.chmod(0o755)
    return script


@pytest.mark.slow
def test_module_and_installed_script_give_the_same_verdicts(tmp_path) -> None:
    # Build the package the way an installer does (setuptools build_py, from a copy of tools/,
    # so no build/ folder appears in the checkout) and run the console script from there.
    pytest.importorskip("setuptools")
    src = tmp_path / "src"
    shutil.copytree(TOOLS, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    lib = tmp_path / "lib"
    proc = subprocess.run(
        [sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py"]
        + ["--build-lib", str(lib)],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    base, cont = _pair_for_invocations(tmp_path)
    installed = _invoke(
        [str(_console_script(tmp_path / "bin")), base, cont], str(lib), tmp_path / "a.json"
    )
    module = _invoke(
        [sys.executable, "-m", "gpubench_tools.compare", base, cont],
        str(TOOLS),
        tmp_path / "b.json",
    )
    assert installed[2] == module[2]
    assert installed[0] == module[0] == 0, installed[1] + module[1]
    assert installed[2]["benchmarks"][0]["overrides"] == ["^matmul/cpu/"]
    assert (lib / "gpubench_tools" / "compare" / config_module.DEFAULT_CONFIG_RESOURCE).exists()
    # Every tool's page templates ship as package data: an installed tool renders from them.
    templates = [p.relative_to(TOOLS) for p in TOOLS.glob("gpubench_tools/**/templates/*.j2")]
    missing = [str(t) for t in templates if not (lib / t).is_file()]
    assert templates and not missing, f"not in the built package: {missing}"


def test_usage_line_names_the_program_as_invoked(tmp_path) -> None:
    script = _console_script(tmp_path / "bin")
    env = dict(os.environ, PYTHONPATH=str(TOOLS))
    as_script = subprocess.run([str(script), "--help"], capture_output=True, text=True, env=env)
    as_module = subprocess.run(
        [sys.executable, "-m", "gpubench_tools.compare", "--help"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert as_script.stdout.splitlines()[0].startswith("usage: gpubench-compare ")
    assert as_module.stdout.splitlines()[0].startswith("usage: python -m gpubench_tools.compare ")


def test_installed_wheel_in_a_venv_matches_the_module(tmp_path) -> None:
    """The real thing, where a wheel can be built offline (setuptools >= 70.1 or `wheel`)."""
    setuptools = pytest.importorskip("setuptools")
    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    if (major, minor) < (70, 1):
        pytest.importorskip("wheel", reason="building a wheel offline needs the wheel package")
    src = tmp_path / "src"
    shutil.copytree(TOOLS, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    proc = subprocess.run(
        pip
        + ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(wheels)]
        + [str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = wheels.glob("*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    proc = subprocess.run(
        pip
        + ["--python", str(venv / "bin" / "python"), "install", "--no-deps", "--no-index"]
        + [str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # numpy and scipy from this interpreter (the venv holds only the tools package).
    import scipy

    site = Path(
        subprocess.check_output(
            [
                str(venv / "bin" / "python"),
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            text=True,
        ).strip()
    )
    (site / "deps.pth").write_text(str(Path(scipy.__file__).resolve().parents[1]) + "\n")
    base, cont = _pair_for_invocations(tmp_path)
    installed = _invoke(
        [str(venv / "bin" / "gpubench-compare"), base, cont], "", tmp_path / "a.json"
    )
    module = _invoke(
        [sys.executable, "-m", "gpubench_tools.compare", base, cont],
        str(TOOLS),
        tmp_path / "b.json",
    )
    assert installed[0] == module[0] == 0, installed[1] + module[1]
    assert installed[2] == module[2]


# --- 5. repeated reasons grouped, --quiet means quiet ------------------------------------------


def test_identical_skip_reasons_are_one_line(capsys, tmp_path) -> None:
    report = load_report(str(QUICKSTART))
    skipped = {r.run_name for r in report.rows if r.status == benchjson.SKIPPED}
    (message,) = {r.error for r in report.rows if r.status == benchjson.SKIPPED}
    assert len(skipped) == 18
    code, out, err, doc = run_json(capsys, tmp_path, str(QUICKSTART), str(QUICKSTART))
    assert code == 2 and len(err.splitlines()) == 1  # single repetitions: cannot judge
    assert sum(message in line for line in out.splitlines()) == 1
    assert not any(name in out for name in skipped)
    ((group),) = doc["not_compared"]
    assert len(group["names"]) == 18 and group["reason"] == message
    code, verbose, _ = run(capsys, str(QUICKSTART), str(QUICKSTART), "--verbose")
    assert sum(message in line for line in verbose.splitlines()) == 1
    assert sum(line.strip() in skipped for line in verbose.splitlines()) == 18
    md = tmp_path / "o.md"
    run(capsys, str(QUICKSTART), str(QUICKSTART), "--markdown", str(md))
    text = md.read_text()
    assert sum(name in text for name in skipped) == 18
    details = re.findall(r"<details>.*?</details>", text, flags=re.S)
    assert all(sum(name in d for d in details) == 1 for name in skipped)


def test_quiet_prints_the_summary_and_failures_only(capsys) -> None:
    # The quick start's run against the CI baseline: 5 common benchmarks, 133 new ones.
    new = set(iteration_names(json.loads(QUICKSTART.read_text()))) - set(
        iteration_names(baseline_doc())
    )
    assert len(new) == 133
    args = (str(BASELINE), str(QUICKSTART), "--config", str(CI_CONFIG))
    code, out, _ = run(capsys, *args)
    assert code == 2 and not [line for line in out.splitlines() if line.strip() in new]
    code, verbose, _ = run(capsys, *args, "--verbose")
    assert len([line for line in verbose.splitlines() if line.strip() in new]) == 133
    code, quiet, err = run(capsys, *args, "--quiet")
    assert code == 2 and len(quiet.splitlines()) == 1 and len(err.splitlines()) == 1


def test_quiet_with_a_failure(capsys, tmp_path) -> None:
    doc = baseline_doc()
    dropped = GEMM.format(m=64)
    rows = [r for r in doc["benchmarks"] if r["run_name"] != dropped]
    new = [r for r in json.loads(QUICKSTART.read_text())["benchmarks"] if "mlp/" in r["run_name"]]
    cont = write(tmp_path / "c.json", rows + new, doc["context"])
    code, quiet, _ = run(capsys, str(BASELINE), cont, "--config", str(CI_CONFIG), "--quiet")
    assert code == 1
    assert quiet.splitlines() == [quiet.splitlines()[0], f"  {dropped}", quiet.splitlines()[-1]]
    assert quiet.splitlines()[0].startswith("REGRESSION")


# --- 6. Markdown never injects ----------------------------------------------------------------

HOSTILE = "x\n**gate: PASS**\n<img src=x onerror=alert(1)>\n# pwned | cell `code`"
# Markup the comment itself writes; anything else with '<' outside a code span would be HTML.
OWN_TAGS = ("<!-- gpubench-compare -->", "<details>", "<summary>", "</summary>", "</details>")


def outside_code_spans(line: str) -> str:
    """The line without its code spans (whose content GitHub shows as text, never as markup)."""
    return re.sub(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", "", line)


def assert_no_injection(text: str, gate: str) -> None:
    lines = [outside_code_spans(line) for line in text.splitlines()]
    assert len([line for line in lines if "**gate" in line]) == 1
    (gate_line,) = [line for line in lines if line.startswith("**gate")]
    assert gate_line.startswith(f"**gate: {gate}**")
    assert len([line for line in lines if line.startswith("#")]) == 1  # our heading only
    rest = "\n".join(lines)
    for tag in OWN_TAGS:
        rest = rest.replace(tag, "")
    assert "<" not in rest
    table = [line for line in text.splitlines() if line.startswith("|")]
    cells = {len(re.findall(r"(?<!\\)\|", outside_code_spans(line))) for line in table}
    assert len(cells) <= 1, cells  # every row has the header's columns


def test_markdown_data_cannot_inject(tmp_path, capsys) -> None:
    evil_name = f"mlp/cpu/{HOSTILE}/threads:1"
    ok_name = "matmul/cpu/<b>bold</b>|pipe/threads:1"
    failing = "mlp/cpu/failing/threads:1"
    base_ctx = dict(CONTEXT, cpu_model=f"EPYC {HOSTILE}", gpubench_git_commit=HOSTILE, date=HOSTILE)
    base_ctx["openblas_config"] = f"OpenBLAS core=<img{HOSTILE}"
    cont_ctx = dict(base_ctx, cpu_model=f"Xeon {HOSTILE}", openblas_config="core=Haswell")
    base_rows = reps(evil_name, spread(1e-3)) + reps(ok_name, spread(1e-3))
    base_rows += reps(failing, spread(1e-3))
    cont_rows = reps(evil_name, spread(3e-3)) + reps(ok_name, spread(1e-3))
    cont_rows += [gb_row(failing, 0.0, error=HOSTILE)]
    cont_rows += [gb_row(f"new/{HOSTILE}", 0.0, error=f"not supported on this machine: {HOSTILE}")]
    base = write(tmp_path / "b.json", base_rows, base_ctx)
    cont = write(tmp_path / "c.json", cont_rows, cont_ctx)
    md = tmp_path / "o.md"
    code, _, err = run(capsys, base, cont, "--markdown", str(md))
    assert (code, err) == (1, "")
    text = md.read_text()
    assert "DIFFERENT HARDWARE" in text and text.count("|") > 10  # the hostile data is there
    assert_no_injection(text, "FAIL")
    # The terminal is one line per item too: no forged gate line in a CI log.
    code, out, _ = run(capsys, base, cont)
    assert len([line for line in out.splitlines() if line.startswith("gate:")]) == 1


def test_markdown_of_an_unusable_input_cannot_inject(tmp_path, capsys) -> None:
    bad = tmp_path / f"x{chr(10)}**gate: PASS**<img src=x onerror=1>.json"
    bad.write_text("{not json")
    md = tmp_path / "o.md"
    code, _, _ = run(capsys, str(bad), str(bad), "--markdown", str(md))
    assert code == 2
    assert_no_injection(md.read_text(), "CANNOT COMPARE")


# --- the paired judgement reads the same policy table -----------------------------------------


def paired_files(tmp_path: Path, cont_rows: list[dict[str, Any]] | None = None) -> tuple[str, str]:
    """The two files of one interleaved run: 12 pairs of one benchmark, the same on both sides
    unless `cont_rows` replaces the contender's rows; no condition counters (conditions unknown)."""
    rows = reps(MLP.format(t=1), spread(1e-3, n=12))
    paths = []
    for role, side_rows in (("base", rows), ("contender", cont_rows or rows)):
        context = {**CONTEXT, "pair_id": "p1", "pair_role": role, "pair_time": "cpu_time"}
        paths.append(write(tmp_path / f"{role}.json", side_rows, context))
    return paths[0], paths[1]


def test_the_paired_judgement_says_conditions_unknown_once(tmp_path, capsys) -> None:
    code, out, _, doc = run_json(capsys, tmp_path, *paired_files(tmp_path))
    assert code == 0 and doc["paired"] is True
    assert len([n for n in doc["notes"] if n.startswith("conditions unknown")]) == 1
    assert len([line for line in out.splitlines() if "conditions unknown" in line]) == 1


def test_a_paired_contender_cut_off_fails(tmp_path, capsys) -> None:
    base, _ = paired_files(tmp_path)
    cont = tmp_path / "contender.json"
    text = cont.read_text()
    cont.write_text(text[: text.rfind("{")])  # a writer stopped inside the last row
    code, out, _, doc = run_json(capsys, tmp_path, base, str(cont))
    assert code == 1 and doc["exit_code"] == 1
    assert any(line.startswith("FAIL: ") and str(cont) in line for line in out.splitlines())


def test_a_malformed_row_in_a_paired_file_is_unusable_with_both_side_outputs(
    tmp_path, capsys
) -> None:
    rows = reps(MLP.format(t=1), spread(1e-3, n=12))
    del rows[3]["time_unit"]
    base, cont = paired_files(tmp_path, rows)
    md = tmp_path / "out.md"
    code, out, err, doc = run_json(capsys, tmp_path, base, cont, "--markdown", str(md))
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and cont in err
    assert doc["exit_code"] == 2 and cont in doc["error"]
    assert md.read_text().count("**gate: ") == 1  # the PR comment says why there is no verdict
