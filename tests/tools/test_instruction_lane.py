"""The gate's instruction lane (gpubench_tools.instructions): the dump reader on real callgrind
dumps, instructions per iteration, the judge's rule, the two lanes' combined exit status, and the
lane end to end on the real bench under valgrind (skipped, with the reason, without valgrind or
without a built bench)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, bench_binary
from gpubench_tools.instructions import combine
from gpubench_tools.instructions.counts import per_iteration, single_threaded
from gpubench_tools.instructions.dumps import DumpError, parse_dump, read_dumps
from gpubench_tools.instructions.judge import (
    FEWER,
    MISSING,
    MORE,
    NEW,
    SAME,
    InstructionRules,
    judge_counts,
    lane_exit,
)
from gpubench_tools.instructions.lane import valgrind_command

DUMPS = Path(__file__).resolve().parent / "fixtures" / "callgrind"
GEMM64 = "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1"
IRIS = "mlp/cpu/small/data:iris/batch:120/hidden:10/readback:1/threads:1"
BENCH = bench_binary()  # GPUBENCH_BENCH, as scripts/test.sh sets it, else build/


# ---- the dump reader, on dumps callgrind 3.19 wrote for bench -----------------------------------


def test_a_region_dump_gives_its_row_iterations_and_instructions() -> None:
    path = DUMPS / "callgrind.out.15431.1"
    region = parse_dump(path.read_text(encoding="latin-1"), str(path))
    assert region is not None
    assert (region.name, region.iterations, region.instructions) == (GEMM64, 1, 99607)
    assert (region.pid, region.part) == (15431, 1)


def test_the_termination_dump_is_not_a_region() -> None:
    # Written at exit with nothing collected (its summary wraps around below zero): not a count.
    text = (DUMPS / "callgrind.out.15431").read_text(encoding="latin-1")
    assert parse_dump(text) is None


def test_read_dumps_keeps_regions_in_dump_order() -> None:
    frame = read_dumps(sorted(DUMPS.glob("callgrind.out.*")))
    assert list(frame["name"]) == [GEMM64, IRIS]
    assert list(frame["instructions"]) == [99607, 367360629]


def test_totals_line_is_read_when_there_is_no_summary() -> None:
    text = (
        "events: Ir Dr\n"
        "desc: Trigger: Client Request: gpubench-region iterations=4 name=a/threads:1\n"
        "fn=(1) f\n0 10 3\ntotals: 400 12\n"
    )
    region = parse_dump(text)
    assert region is not None and region.instructions == 400 and region.iterations == 4


def test_a_region_without_an_instruction_count_is_refused() -> None:
    text = "desc: Trigger: Client Request: gpubench-region iterations=1 name=a/threads:1\n"
    with pytest.raises(DumpError, match="no Ir count"):
        parse_dump(text, "x.out")


# ---- instructions per iteration ------------------------------------------------------------------


def regions(rows: list[tuple[str, int, int]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"path": "", "pid": 1, "part": i, "name": n, "iterations": it, "instructions": ins}
            for i, (n, it, ins) in enumerate(rows)
        ]
    )


def test_the_region_with_the_most_iterations_is_counted() -> None:
    # Google Benchmark's calls while it picks the count: 1, 10, then 100 iterations (with a fixed
    # cost of 500 instructions a loop, which the most iterations dilute the most).
    frame = per_iteration(
        regions(
            [("a/threads:1", 1, 1500), ("a/threads:1", 10, 10500), ("a/threads:1", 100, 100500)]
        )
    )
    row = frame.iloc[0]
    assert row["iterations"] == 100 and row["regions"] == 3
    assert row["instructions_per_iteration"] == pytest.approx(1005.0)
    assert row["spread_pct"] == 0


def test_repetitions_spread_and_multi_threaded_rows_are_left_out() -> None:
    frame = per_iteration(
        regions(
            [
                ("a/threads:1", 2, 2000),
                ("a/threads:1", 2, 2020),  # a second repetition, 1 % more
                ("a/threads:2", 2, 9999),  # the workers' spinning: not counted
                ("b/threads:1", 0, 50),  # a fixture that stopped before its loop
            ]
        )
    )
    assert list(frame["name"]) == ["a/threads:1"]
    assert frame.iloc[0]["spread_pct"] == pytest.approx((1010 - 1000) / 1005 * 100)


@pytest.mark.parametrize(
    "name,single",
    [
        ("m/threads:1", True),
        ("m/threads:1/precision:bf16", True),
        ("m/threads:12", False),
        ("m", False),
        # The count a dump gives after the name (the public API's rows) decides over the name.
        ("saxpy/cpu/loop/n:1024;threads=1", True),
        ("saxpy/cpu/loop/n:1024;threads=4", False),
        ("m/threads:4;threads=4", False),
        ("m/threads:1;threads=2", False),
    ],
)
def test_single_threaded_reads_the_threads_part(name: str, single: bool) -> None:
    assert single_threaded(name) is single


def dump(tmp: Path, part: int, description: str, instructions: int) -> Path:
    """A region's dump file as callgrind writes its header (the lines dumps.py reads)."""
    path = tmp / f"callgrind.out.7.{part}"
    path.write_text(
        f"version: 1\npid: 7\npart: {part}\n\n"
        f"desc: Trigger: Client Request: gpubench-region {description}\n\n"
        f"events: Ir\nsummary: {instructions}\n\nfn=(1) f\n0 {instructions}\n"
    )
    return path


def test_a_dump_that_carries_its_thread_count_is_counted_under_the_row_name(tmp_path: Path) -> None:
    # The public API's rows have no threads part: their dumps say how many threads ran the row,
    # and the row keeps its name in the counts; dumps without the count (the suite's, and any
    # bench from before) are judged by the name, and a name without threads:1 is not counted.
    files = [
        dump(tmp_path, 1, "iterations=1 name=saxpy/cpu/loop/n:1024;threads=1", 6891),
        dump(tmp_path, 2, "iterations=1 name=saxpy/cpu/loop/n:16384;threads=2", 9999),
        dump(tmp_path, 3, f"iterations=2 name={GEMM64}", 199214),
        dump(tmp_path, 4, "iterations=1 name=saxpy/cpu/loop/n:262144", 524868),
    ]
    frame = per_iteration(read_dumps(files))
    assert list(frame["name"]) == ["saxpy/cpu/loop/n:1024", GEMM64]
    assert list(frame["instructions_per_iteration"]) == [6891.0, 99607.0]


# ---- the judge ------------------------------------------------------------------------------------


def counts(values: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "name": n,
                "regions": 1,
                "iterations": 1,
                "instructions_per_iteration": v,
                "spread_pct": 0.0,
            }
            for n, v in values.items()
        ]
    )


@pytest.mark.parametrize(
    "contender,verdict",
    [
        (1_000_000, SAME),
        (1_009_999, SAME),  # +0.9999 %: under the 1 % threshold
        (1_010_000, MORE),  # +1 % exactly fails
        (1_020_000, MORE),
        (990_000, FEWER),
        (990_001, SAME),
    ],
)
def test_the_rule_fails_one_percent_more(contender: int, verdict: str) -> None:
    frame = judge_counts(counts({"a": 1_000_000}), counts({"a": contender}))
    assert frame.iloc[0]["verdict"] == verdict
    assert lane_exit(frame) == (1 if verdict == MORE else 0)


def test_the_threshold_is_configurable() -> None:
    frame = judge_counts(counts({"a": 100}), counts({"a": 104}), InstructionRules(0.05))
    assert frame.iloc[0]["verdict"] == SAME


def test_missing_fails_new_is_listed_and_the_base_order_is_kept() -> None:
    base = counts({"m:64": 10.0, "m:192": 20.0, "m:256": 30.0})
    contender = counts({"m:64": 10.0, "m:256": 30.0, "m:512": 40.0})
    frame = judge_counts(base, contender)
    assert list(frame["name"]) == ["m:64", "m:192", "m:256", "m:512"]
    assert list(frame["verdict"]) == [SAME, MISSING, SAME, NEW]
    assert math.isnan(frame.iloc[1]["change"])
    assert lane_exit(frame) == 1


# ---- the gate's two lanes together ------------------------------------------------------------------


@pytest.mark.parametrize(
    "timing,instructions,gate",
    [
        (0, 0, 0),
        (0, 1, 1),  # the instruction lane alone fails the gate
        (1, 0, 1),  # and the timing lane alone
        (2, 0, 2),  # a PASS of instructions does not resolve what the clock could not
        (2, 1, 1),
        (0, 2, 0),  # nothing counted (no valgrind, an old base) changes nothing
        (0, None, 0),
        (2, None, 2),
        (3, 0, 3),  # the timing lane's NOT RESOLVED stands beside a PASS of instructions
        (3, 1, 1),  # and a regression of instructions still fails
    ],
)
def test_combined_exit(timing: int, instructions: int | None, gate: int) -> None:
    assert combine.combined_exit(timing, instructions) == gate


def test_a_timing_lane_not_resolved_says_so_in_the_gate_line() -> None:
    assert (
        combine.gate_line(3, 0)
        == "gate: NOT RESOLVED (exit 3): timing not resolved; instructions pass"
    )


def test_combine_prints_both_lanes_and_writes_one_markdown(tmp_path: Path, capsys) -> None:
    timing_json = tmp_path / "t.json"
    timing_json.write_text(json.dumps({"gate": "gate: PASS: nothing slower"}))
    instr_json = tmp_path / "i.json"
    instr_json.write_text(json.dumps({"gate": "instructions: FAIL: more (1 more)"}))
    (tmp_path / "i.md").write_text("**instructions: FAIL**\n")
    code = combine.main(
        [
            "--timing-exit=0",
            "--instructions-exit=1",
            f"--timing-json={timing_json}",
            f"--instructions-json={instr_json}",
            f"--instructions-markdown={tmp_path / 'i.md'}",
            f"--markdown={tmp_path / 'gate.md'}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "timing lane: gate: PASS" in out and "instruction lane: instructions: FAIL" in out
    assert "gate: FAIL (exit 1): timing pass; instructions FAIL" in out
    text = (tmp_path / "gate.md").read_text()
    assert text.count("gate: FAIL") == 1 and "### Instruction lane" in text


def test_valgrind_command_counts_only_the_regions_and_follows_wrappers(tmp_path: Path) -> None:
    cmd = valgrind_command("valgrind", tmp_path, ["./bench-gate"], "^x$")
    assert "--collect-atstart=no" in cmd and "--instr-atstart=no" in cmd
    assert "--trace-children=yes" in cmd  # a wrapper script's exec'd bench is counted too
    assert cmd[cmd.index("./bench-gate") + 1 :][:2] == [
        "--benchmark_filter=^x$",
        "--benchmark_min_time=1e-9",
    ]


# ---- end to end, on the real bench under valgrind -------------------------------------------------


def _why_not_end_to_end() -> str | None:
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (scripts/install-deps.sh installs it)"
    if not BENCH.is_file():
        return f"{BENCH} is not built"
    return None


@pytest.mark.skipif(_why_not_end_to_end() is not None, reason=str(_why_not_end_to_end()))
def test_lane_end_to_end_on_the_real_bench(tmp_path: Path) -> None:
    # The base through a wrapper that execs bench (as ci_gate.sh --against runs it), the
    # contender bare: both must be counted, and the same binary must count the same.
    wrapper = tmp_path / "bench-wrapper"
    wrapper.write_text(f'#!/bin/sh\nexec "{BENCH}" "$@"\n')
    wrapper.chmod(0o755)
    out = tmp_path / "lane"
    proc = run_lane(wrapper, BENCH, f"^{GEMM64}$", out, tmp_path / "lane.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "lane.json").read_text())
    [row] = doc["benchmarks"]
    assert row["name"] == GEMM64 and row["verdict"] == SAME
    assert row["base_per_iteration"] == row["contender_per_iteration"] > 10_000
    assert doc["openblas_core_under_valgrind"] == {"base": "Haswell", "contender": "Haswell"}
    assert "instructions: PASS" in proc.stdout


def run_lane(
    base: Path, contender: Path, flt: str, out: Path, json_out: Path
) -> subprocess.CompletedProcess:
    """The lane's command line on two programs, as ci_gate.sh and gpubench-gate start it."""
    lane = [sys.executable, "-m", "gpubench_tools.instructions", f"--base-bench={base}"]
    lane += [f"--contender-bench={contender}", f"--benchmark_filter={flt}", f"--out-dir={out}"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "tools")}
    return subprocess.run(
        lane + [f"--json={json_out}"], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip


# A user's program built against the installed package (scripts/build-examples.sh, where nvcc is).
SAXPY = BENCH.parents[1] / "examples" / "saxpy" / "saxpy"


@pytest.mark.skipif(_why_not_end_to_end() is not None, reason=str(_why_not_end_to_end()))
@pytest.mark.skipif(not SAXPY.is_file(), reason=f"{SAXPY} is not built (scripts/build-examples.sh)")
def test_lane_counts_a_user_programs_rows_under_their_own_names(tmp_path: Path) -> None:
    # The public API's CPU rows have no threads part in their names; their regions say they ran
    # on one thread, so the lane counts them, and the verdicts carry the rows' own names.
    flt = "^saxpy/cpu/loop/n:1024$"
    proc = run_lane(SAXPY, SAXPY, flt, tmp_path / "lane", tmp_path / "lane.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [row] = json.loads((tmp_path / "lane.json").read_text())["benchmarks"]
    assert row["name"] == "saxpy/cpu/loop/n:1024" and row["verdict"] == SAME
    assert row["base_per_iteration"] == row["contender_per_iteration"] > 1024


@pytest.mark.parametrize("empty,counted", [("base", "contender"), ("contender", "base")])
def test_no_region_at_all_is_not_counted(tmp_path: Path, capsys, empty: str, counted: str) -> None:
    # A base built before the regions existed (or without valgrind/callgrind.h) dumps none; so
    # does a contender that lost them. Nothing counted on a side is not a verdict.
    for side in ("base", "contender"):
        (tmp_path / side).mkdir()
    shutil.copy(DUMPS / "callgrind.out.15431.1", tmp_path / counted / "callgrind.out.15431.1")
    from gpubench_tools.instructions.lane import main

    assert main(["--from", str(tmp_path), "--json", str(tmp_path / "lane.json")]) == 2
    out = capsys.readouterr().out
    assert f"instructions: NOT COUNTED: the {empty} dumped no single-threaded instruction" in out
    assert json.loads((tmp_path / "lane.json").read_text())["exit_code"] == 2
    assert per_iteration(read_dumps([])).empty


# ---- the records the outputs render -----------------------------------------------------------------


def test_the_gate_line_record_words_each_status() -> None:
    assert combine.gate_record(3, 0) == combine.GateLine("NOT RESOLVED", 3, "not resolved", "pass")
    assert combine.gate_record(2, None) == combine.GateLine(
        "CANNOT JUDGE", 2, "cannot judge or count", "not run"
    )
    assert combine.gate_record(0, 1) == combine.GateLine("FAIL", 1, "pass", "FAIL")


def test_the_lane_record_counts_percents_and_leaves_no_count_empty() -> None:
    from gpubench_tools.instructions.render import LaneResult, lane_text

    rules = InstructionRules(0.02)
    frame = judge_counts(counts({"a": 100, "b": 10}), counts({"a": 103, "c": 5}), rules)
    text = lane_text(
        LaneResult(lane_exit(frame), rules, frame, openblas={"base": "Haswell", "contender": ""})
    )
    assert (text.verdict, text.threshold_pct, text.width) == ("FAIL", 2.0, 1)
    assert text.tally == ((1, MORE), (1, MISSING), (1, NEW))
    assert text.openblas == (("base", "Haswell"),)
    more, missing, new = text.rows
    assert more.change_pct == pytest.approx(3.0) and missing.contender_per_iteration is None
    assert missing.change_pct is None and new.base_per_iteration is None
    assert new.contender_per_iteration == 5.0
