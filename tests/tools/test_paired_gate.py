"""Tests of the paired gate: the statistics (compare/paired.py), the interleaving driver
(compare/interleave.py) with stand-in bench scripts that print bench JSON, gpubench-compare on a
paired file pair, bad input, and scripts/ci_gate.sh's paired modes (--base-bench/--contender-bench,
--against REF with a stand-in project that "builds" in a second)."""

from __future__ import annotations

import json
import random
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import wilcoxon

from gpubench_tools.benchjson import load_report
from gpubench_tools.cli import UnusableInput
from gpubench_tools.compare import main as compare_main
from gpubench_tools.compare import paired, stats
from gpubench_tools.compare.interleave import exact_filter
from gpubench_tools.compare.interleave import main as interleave_main

ROOT = Path(__file__).resolve().parents[2]
GATE = ROOT / "scripts" / "ci_gate.sh"
RULES = stats.DEFAULT_RULES


def noisy_pairs(n: int, shift: float, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n pairs of times: a shared per-pair level, independent noise on each side, the contender
    `shift` slower."""
    rng = np.random.default_rng(seed)
    level = 1e-3 * np.exp(rng.normal(0, 0.05, n))
    base = level * np.exp(rng.normal(0, noise, n))
    cont = level * np.exp(rng.normal(0, noise, n)) * (1 + shift)
    return base, cont


# ---- statistics ----------------------------------------------------------------------------------


def test_interval_inverts_the_signed_rank_test() -> None:
    # The interval's ends are where scipy's exact two-sided Wilcoxon test crosses alpha: a shift
    # just inside is not rejected, just outside is.
    for seed in range(5):
        d = np.random.default_rng(seed).normal(0.01, 0.02, 15)
        est = stats.estimate(d, 0.01)
        for end, sign in ((math.log(est.low), -1), (math.log(est.high), 1)):
            inside = wilcoxon(d - (end - sign * 1e-9)).pvalue
            outside = wilcoxon(d - (end + sign * 1e-9)).pvalue
            assert inside >= 0.01 > outside, (seed, end, inside, outside)
        assert est.low < est.ratio < est.high


def test_fewest_pairs_for_an_interval() -> None:
    assert stats.min_pairs_for(0.01) == 8  # 2 / 2**8 < 0.01 <= 2 / 2**7
    assert stats.min_pairs_for(0.002) == 10  # the default: 2 / 2**10 < 0.002
    assert stats.interval_rank(7, 0.01) == 0
    assert stats.judge_values([1.0] * 9, [1.0] * 9, RULES)[0] == stats.FEW


@pytest.mark.parametrize("shift", [0.05, 0.10, 0.20])
def test_planted_slowdown_is_caught(shift: float) -> None:
    caught = sum(
        stats.judge_values(*noisy_pairs(24, shift, 0.015, seed), RULES)[0] == stats.SLOWER
        for seed in range(50)
    )
    assert caught >= 48, caught


def test_unchanged_code_is_not_flagged() -> None:
    verdicts = [
        stats.judge_values(*noisy_pairs(24, 0.0, 0.02, seed), RULES)[0] for seed in range(300)
    ]
    assert verdicts.count(stats.SLOWER) <= 1
    assert verdicts.count(stats.SAME) >= 250


def test_faster_is_not_slower() -> None:
    assert stats.judge_values(*noisy_pairs(24, -0.1, 0.01, 1), RULES)[0] == stats.FASTER


def test_significant_but_within_the_margin_is_same() -> None:
    # 1 % slower, measured precisely: real, significant, and below the 3 % that matters.
    verdict, est = stats.judge_values(*noisy_pairs(30, 0.01, 0.002, 3), RULES)
    assert est is not None and est.low > 1.0
    assert verdict == stats.SAME


def test_straddling_the_margin_is_ambiguous() -> None:
    # An estimate beyond the margin that the pairs cannot tell from noise, and an estimate within
    # it whose interval reaches beyond: neither is called slower or the same.
    base = np.full(10, 1e-3)
    noisy = base * np.exp(np.array([0.12, -0.08, 0.10, -0.05, 0.09, 0.07, -0.06, 0.11, 0.0, 0.08]))
    verdict, est = stats.judge_values(base, noisy, RULES)
    assert verdict == stats.AMBIGUOUS and est.ratio > 1.03 and est.low < 1.0
    near = base * np.exp(np.array([0.01, 0.03, 0.0, 0.05, 0.02, 0.04, -0.01, 0.06, 0.02, 0.01]))
    verdict, est = stats.judge_values(base, near, RULES)
    assert verdict == stats.AMBIGUOUS and est.low < 1.03 < est.high


def test_rules_refuse_what_cannot_work() -> None:
    for kwargs in ({"margin": 0.0}, {"margin": float("nan")}, {"alpha": 0.7}, {"start_pairs": 5}):
        with pytest.raises(UnusableInput):
            stats.rules_from(**kwargs)


# ---- paired files and gpubench-compare ----------------------------------------------------------


def row(name: str, index: int, seconds: float, **extra: object) -> dict:
    out = {
        "name": name,
        "run_name": name,
        "run_type": "iteration",
        "repetitions": 0,
        "repetition_index": index,
        "threads": 1,
        "iterations": 100,
        "real_time": seconds * 1.3e9,
        "cpu_time": seconds * 1e9,
        "time_unit": "ns",
    }
    out.update(extra)
    return out


def write_pair(tmp: Path, base: dict[str, list], cont: dict[str, list], pair_id: str = "p1"):
    """Two paired files; base/cont map a benchmark name to its rows' times (None: no row)."""
    paths = []
    for side, data, pid in (("base", base, pair_id), ("contender", cont, pair_id)):
        rows = [
            r if isinstance(r, dict) else row(name, i, r)
            for name, times in data.items()
            for i, r in enumerate(times)
            if r is not None
        ]
        ctx = {"pair_id": pid, "pair_role": side, "pair_time": "cpu_time", "num_cpus": 2}
        path = tmp / f"{side}.json"
        path.write_text(json.dumps({"context": ctx, "benchmarks": rows}))
        paths.append(str(path))
    return paths


def judged(tmp: Path, base: dict, cont: dict, capsys, *args: str, pair_id: str = "p1"):
    b, c = write_pair(tmp, base, cont, pair_id)
    code = compare_main([b, c, "--json", str(tmp / "out.json"), *args])
    out = capsys.readouterr()
    doc = json.loads((tmp / "out.json").read_text()) if (tmp / "out.json").exists() else {}
    return code, out.out, out.err, doc


def times(shift: float, seed: int, n: int = 16, noise: float = 0.01) -> tuple[list, list]:
    b, c = noisy_pairs(n, shift, noise, seed)
    return list(b), list(c)


def test_compare_judges_a_paired_pair(tmp_path: Path, capsys) -> None:
    b1, c1 = times(0.0, 1)
    b2, c2 = times(0.10, 2)
    code, out, _, doc = judged(tmp_path, {"a": b1, "b": b2}, {"a": c1, "b": c2}, capsys)
    assert code == 1
    assert "paired judgement" in out and "gate: FAIL" in out
    verdicts = {b["name"]: b["verdict"] for b in doc["benchmarks"]}
    assert verdicts == {"a": "same", "b": "slower"}
    assert doc["paired"] is True and doc["exit_code"] == 1


@pytest.mark.parametrize("flag", ["--markdown", "--json"])
@pytest.mark.parametrize("shift, verdict", [(0.10, 1), (0.0, 0)])
def test_an_unwritable_side_output_keeps_the_verdict(
    tmp_path: Path, capsys, flag: str, shift: float, verdict: int
) -> None:
    """A --markdown or --json that cannot be written is named on stderr after the verdict; the exit
    status stays the verdict's (a FAIL is never lost to exit 2, a PASS never turned into one)."""
    b1, c1 = times(shift, 5)
    b, c = write_pair(tmp_path, {"a": b1}, {"a": c1})
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = compare_main([b, c, flag, str(blocker / "out")])  # a folder that is a file
    out = capsys.readouterr()
    assert code == verdict, out.err
    assert ("gate: FAIL" if verdict else "gate: PASS") in out.out
    assert f"the verdict above stands (exit {verdict})" in out.err
    assert str(blocker / "out") in out.err


def test_compare_passes_unchanged_pairs(tmp_path: Path, capsys) -> None:
    b1, c1 = times(0.0, 3)
    code, out, _, doc = judged(tmp_path, {"a": b1}, {"a": c1}, capsys)
    assert code == 0 and "gate: PASS" in out


def test_files_of_two_runs_are_not_paired(tmp_path: Path, capsys) -> None:
    # Different pair ids: the two files are strangers, judged the usual (unpaired) way.
    b = tmp_path / "b"
    b.mkdir()
    paths = write_pair(b, {"a": times(0, 1)[0]}, {"a": times(0, 1)[1]}, "x")
    other = json.loads(Path(paths[1]).read_text())
    other["context"]["pair_id"] = "y"
    Path(paths[1]).write_text(json.dumps(other))
    compare_main(paths)
    assert "paired judgement" not in capsys.readouterr().out


def test_missing_benchmark_fails(tmp_path: Path, capsys) -> None:
    b1, c1 = times(0.0, 1)
    code, out, _, doc = judged(tmp_path, {"a": b1, "gone": b1}, {"a": c1}, capsys)
    assert code == 1 and "missing" in out


def test_contender_missing_repetitions_is_never_a_pass(tmp_path: Path, capsys) -> None:
    b1, c1 = times(0.0, 1)
    c1[5] = None
    c1[9] = None
    code, out, err, doc = judged(tmp_path, {"a": b1}, {"a": c1}, capsys)
    assert code == 2
    assert "the contender lacks repetitions 5, 9" in out
    assert "CANNOT JUDGE" in err and len(err.strip().splitlines()) == 1


def test_contender_that_now_fails_fails(tmp_path: Path, capsys) -> None:
    b1, c1 = times(0.0, 1)
    c1[3] = row("a", 3, 0.0, error_occurred=True, error_message="result mismatch")
    code, out, _, _ = judged(tmp_path, {"a": b1}, {"a": c1}, capsys)
    assert code == 1 and "now fails: result mismatch" in out


def test_invalid_contender_time_fails(tmp_path: Path, capsys) -> None:
    b1, c1 = times(0.0, 1)
    c1[2] = row("a", 2, -1.0)
    code, out, _, _ = judged(tmp_path, {"a": b1}, {"a": c1}, capsys)
    assert code == 1


def test_nothing_resolved_is_neither_a_pass_nor_a_regression(tmp_path: Path, capsys) -> None:
    base = [1e-3] * 10
    cont = list(
        np.array(base) * np.exp([0.12, -0.08, 0.10, -0.05, 0.09, 0.07, -0.06, 0.11, 0, 0.08])
    )
    code, out, err, doc = judged(tmp_path, {"a": base}, {"a": cont}, capsys)
    assert code == 3 and "AMBIGUOUS" in out and "gate: NOT RESOLVED" in out
    assert doc["exit_code"] == 3


def test_an_interval_reaching_a_10_percent_slowdown_is_never_a_pass(tmp_path: Path, capsys) -> None:
    """One benchmark resolved the same, one AMBIGUOUS with a small estimate (not possibly slower
    beyond the margin) whose interval still reaches +10 %: not a pass (3), not a regression."""
    same_b, same_c = times(0.0, 7, n=16, noise=0.002)
    wide_b = [1e-3] * 12
    wide_c = list(np.array(wide_b) * np.exp([0.25, -0.2, 0.2, -0.22, 0.15, -0.18] * 2))
    code, out, _, doc = judged(
        tmp_path, {"a": same_b, "w": wide_b}, {"a": same_c, "w": wide_c}, capsys
    )
    (wide,) = [b for b in doc["benchmarks"] if b["name"] == "w"]
    assert wide["verdict"] == stats.AMBIGUOUS and wide["interval"][1] >= 1.10, wide
    assert code == 3 and "interval still reaches +10%" in out, out


def test_disturbed_pairs_are_left_out(tmp_path: Path, capsys) -> None:
    # Per-repetition conditions, once the harness records them: a repetition marked disturbed
    # leaves its pair out, and the count is said. Here the 6 disturbed contender repetitions are
    # the slow ones: left out, the rest is the same.
    b1, c1 = times(0.0, 4, n=20)
    for i in range(6):
        c1[i] = row("a", i, c1[i] * 1.5, disturbed=1.0)
    code, out, _, doc = judged(tmp_path, {"a": b1}, {"a": c1}, capsys)
    assert code == 0
    assert doc["benchmarks"][0]["pairs_left_out"] == 6 and "6 left out as disturbed" in out


def test_max_ratio_sets_the_margin(tmp_path: Path, capsys) -> None:
    b1, c1 = times(0.05, 5, noise=0.003)
    assert judged(tmp_path, {"a": b1}, {"a": c1}, capsys)[0] == 1
    assert judged(tmp_path, {"a": b1}, {"a": c1}, capsys, "--max-ratio", "1.10")[0] == 0


# ---- the driver, with stand-in bench scripts ----------------------------------------------------

STANDIN = textwrap.dedent("""\
    #!{python} -S
    # A stand-in for bench: writes bench JSON for the --benchmark_out it is given. Configured by
    # its own arguments (after the path, in a wrapper) and a state file counting its invocations.
    # -S: the standard library is all it needs, and a round starts two of it.
    import json, os, random, re, signal, sys
    conf = dict(a.split("=", 1) for a in {conf!r}.split() if "=" in a)
    args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    if conf.get("need_data"):  # as bench's MLP rows: the data files of its own source tree
        where = os.path.join(os.environ.get("GPUBENCH_DATA_DIR", "."), "iris.csv")
        if not os.path.exists(where):
            sys.exit(f"cannot open data file {{where}}")
    state = conf.get("state")
    count = 0
    if state:
        count = int(open(state).read()) + 1 if os.path.exists(state) else 1
        open(state, "w").write(str(count))
    names = conf.get("names", "bm/a,bm/b").split(",")
    flt = args.get("--benchmark_filter")
    if flt:
        names = [n for n in names if re.search(flt, n)]
    if conf.get("drop"):
        names = [n for n in names if n != conf["drop"]]
    # Deterministic, and different for every run: the output's name says the round and side.
    key = conf.get("seed", "") + os.path.basename(args["--benchmark_out"]) + str(count)
    rng = random.Random(sum(ord(ch) * 31 ** i for i, ch in enumerate(key)))
    reps = int(args.get("--benchmark_repetitions", "1"))
    rows = []
    for i, name in enumerate(names):
        factor = float(conf.get("slow", "1")) if name == conf.get("slow_name", name) else 1.0
        if count > int(conf.get("slow_first", "1000000")):  # a burst over the first runs only
            factor = 1.0
        for r in range(reps):
            noise = float(conf.get("noise", "0.01"))
            if conf.get("noise_name", name) != name:
                noise = 0.002
            t = (i + 1) * 1000.0 * factor * (1 + rng.gauss(0, noise))
            rows.append(dict(name=name, run_name=name, run_type="iteration", repetitions=reps,
                             repetition_index=r, threads=1, iterations=100, real_time=t,
                             cpu_time=t, time_unit="ns"))
            if conf.get("disturb_odd") and count % 2:
                rows[-1]["disturbed"] = 1.0
    with open(args["--benchmark_out"], "w") as fh:
        json.dump(dict(context=dict(executable=sys.argv[0]), benchmarks=rows), fh)
    if conf.get("crash_at") and count >= int(conf["crash_at"]):
        print("Segmentation fault in the stand-in", file=sys.stderr)
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    """)


def standin(tmp: Path, name: str, **conf: str) -> str:
    path = tmp / name
    text = " ".join(f"{k}={v}" for k, v in conf.items())
    path.write_text(STANDIN.format(python=sys.executable, conf=text))
    path.chmod(0o755)
    return str(path)


def drive(tmp: Path, base: str, cont: str, *args: str) -> tuple[int, Path]:
    out = tmp / "run"
    code = interleave_main(
        [
            "--base-bench",
            base,
            "--contender-bench",
            cont,
            "--out-dir",
            str(out),
            "--json",
            str(out / "verdict.json"),
            "--pairs",
            "10",
            "--max-pairs",
            "20",
            *args,
        ]
    )
    return code, out


def test_a_slower_verdict_is_confirmed_on_more_pairs_before_it_fails(
    tmp_path: Path, capsys
) -> None:
    """A burst that slows the contender's first ten runs by 6 % makes every first pair slower
    (SLOWER on 10 pairs); ten more pairs without it withdraw the verdict. A steady 6 % stays
    SLOWER on all 20 (drive's --max-pairs 20 caps the confirmation's 24)."""
    base = standin(tmp_path, "a", seed="a", noise="0.002")
    burst = standin(
        tmp_path, "burst", seed="b", noise="0.002", slow="1.06", slow_first="10",
        state=str(tmp_path / "burst.count"),
    )  # fmt: skip
    code, out = drive(tmp_path, base, burst)
    verdicts = json.loads((out / "verdict.json").read_text())["benchmarks"]
    # Withdrawn: AMBIGUOUS and possibly slower, named loudly; with nothing else resolved that is
    # "not resolved" (3), never a regression (1).
    assert code == 3, capsys.readouterr()
    assert {(b["verdict"], b["pairs"]) for b in verdicts} == {(stats.AMBIGUOUS, 20)}
    steady = standin(tmp_path, "steady-bench", seed="c", noise="0.002", slow="1.06")
    code, out = drive(tmp_path / "steady", base, steady)
    verdicts = json.loads((out / "verdict.json").read_text())["benchmarks"]
    assert code == 1
    assert {(b["verdict"], b["pairs"]) for b in verdicts} == {(stats.SLOWER, 20)}
    assert stats.needs_confirmation(12, stats.DEFAULT_RULES)
    assert not stats.needs_confirmation(24, stats.DEFAULT_RULES)


def test_driver_writes_two_paired_bench_files(tmp_path: Path, capsys) -> None:
    code, out = drive(tmp_path, standin(tmp_path, "a", seed="a"), standin(tmp_path, "b", seed="b"))
    assert code == 0, capsys.readouterr()
    base, cont = load_report(str(out / "base.json")), load_report(str(out / "contender.json"))
    assert paired.is_pair(base, cont)
    assert base.context["pair_role"] == "base" and cont.context["paired_with"] == "base.json"
    # Each round's order is random, and replayable from the run's id.
    replay = random.Random(f"{base.context['pair_id']}-0")
    expected = ["AB" if replay.random() < 0.5 else "BA" for _ in range(10)]
    assert base.context["pair_order"].split() == expected
    for report in (base, cont):
        indices = sorted(r.repetition_index for r in report.rows if r.run_name == "bm/a")
        assert indices == list(range(10))
    # One value per process: of its 9 inner repetitions, the fastest (that repetition's own row).
    assert base.context["pair_repetitions_per_run"] == 9
    for side, report in (("a", base), ("b", cont)):
        ran = json.loads((out / "logs" / f"round-003-{side}.json").read_text())["benchmarks"]
        fastest = min(r["cpu_time"] for r in ran if r["name"] == "bm/b")
        kept = [r for r in report.rows if r.run_name == "bm/b" and r.repetition_index == 2]
        assert len(ran) == 18 and [r.cpu_time_s * 1e9 for r in kept] == [pytest.approx(fastest)]
    # Both sides start alike: through links of the same length, outputs of the same length.
    for side, target in (("a", tmp_path / "a"), ("b", tmp_path / "b")):
        assert (out / "launch" / side / "bench").resolve() == target.resolve()
    assert {len(str(p)) for p in (out / "logs").glob("round-001-*.json")} == {
        len(str(out / "logs" / "round-001-a.json"))
    }
    # The same files judged offline by gpubench-compare: the same verdicts.
    verdict = json.loads((out / "verdict.json").read_text())
    capsys.readouterr()
    assert (
        compare_main(
            [
                str(out / "base.json"),
                str(out / "contender.json"),
                "--json",
                str(tmp_path / "again.json"),
            ]
        )
        == 0
    )
    again = json.loads((tmp_path / "again.json").read_text())
    assert [b["verdict"] for b in again["benchmarks"]] == [
        b["verdict"] for b in verdict["benchmarks"]
    ]


def test_driver_fails_a_slower_contender(tmp_path: Path, capsys) -> None:
    slow = standin(tmp_path, "slow", slow="1.10", slow_name="bm/b", seed="s")
    code, _ = drive(tmp_path, standin(tmp_path, "a", seed="a"), slow)
    out = capsys.readouterr().out
    assert code == 1 and "SLOWER" in out and "bm/b" in out


def test_driver_reruns_ambiguous_benchmarks_only(tmp_path: Path, capsys) -> None:
    # bm/b is so noisy that 10 pairs cannot place it; bm/a is settled at once. More rounds run,
    # of bm/b alone, up to --max-pairs.
    noisy = dict(noise="0.08", noise_name="bm/b")
    base = standin(tmp_path, "a", seed="a", **noisy)
    cont = standin(tmp_path, "b", seed="b", slow="1.08", slow_name="bm/b", **noisy)
    code, out = drive(tmp_path, base, cont)
    report = load_report(str(out / "contender.json"))
    count = {n: sum(r.run_name == n for r in report.rows) for n in ("bm/a", "bm/b")}
    assert count["bm/b"] > count["bm/a"], count
    assert count["bm/b"] <= 20


def test_the_fastest_of_a_process_is_judged_disturbed_or_not(tmp_path: Path, capsys) -> None:
    # Every other contender process is marked disturbed: with several inner repetitions a
    # process's fastest stands for it, and every pair is judged (none lost to a busy machine).
    base = standin(tmp_path, "a", seed="a")
    cont = standin(tmp_path, "b", seed="b", disturb_odd="1", state=str(tmp_path / "count"))
    code, out = drive(tmp_path, base, cont)
    verdict = json.loads((out / "verdict.json").read_text())
    assert code == 0, capsys.readouterr()
    assert {(b["pairs"], b["pairs_left_out"]) for b in verdict["benchmarks"]} == {(10, 0)}
    marked = load_report(str(out / "contender.json")).rows
    assert any(r.counters.get("disturbed") for r in marked)


def test_disturbed_pairs_are_replaced_by_more_rounds(tmp_path: Path, capsys) -> None:
    # One repetition per process: every other contender run is marked disturbed: 10 rounds leave
    # 5 pairs, too few; the driver runs more rounds until 10 undisturbed pairs judge, within
    # --max-pairs 20.
    base = standin(tmp_path, "a", seed="a")
    cont = standin(tmp_path, "b", seed="b", disturb_odd="1", state=str(tmp_path / "count"))
    code, out = drive(tmp_path, base, cont, "--inner-repetitions", "1")
    verdict = json.loads((out / "verdict.json").read_text())
    assert code == 0, capsys.readouterr()
    assert all(b["pairs"] >= 10 and b["pairs_left_out"] >= 5 for b in verdict["benchmarks"])
    # With no room for more rounds, the benchmarks are not judged, and the gate says why: a busy
    # machine is neither a pass nor a regression (3).
    code, out = drive(tmp_path, base, cont, "--max-pairs", "10", "--inner-repetitions", "1")
    text = capsys.readouterr()
    assert code == 3 and "the machine was busy" in text.err


def test_contender_crash_midway_fails_naming_it(tmp_path: Path, capsys) -> None:
    state = tmp_path / "count"
    crash = standin(tmp_path, "crash", crash_at="3", state=str(state))
    code, out = drive(tmp_path, standin(tmp_path, "a"), crash)
    err = capsys.readouterr().err
    assert code == 1
    assert "contender bench" in err and "signal 11" in err and "round 3" in err
    assert len(err.strip().splitlines()) == 1
    # The rounds before the crash stay on disk.
    assert len(load_report(str(out / "base.json")).context["pair_order"].split()) == 2


def test_base_crash_is_unusable(tmp_path: Path, capsys) -> None:
    crash = standin(tmp_path, "crash", crash_at="1", state=str(tmp_path / "count"))
    code, _ = drive(tmp_path, crash, standin(tmp_path, "b"))
    err = capsys.readouterr().err
    assert code == 2 and "base bench" in err


def test_mismatched_benchmark_sets_fail(tmp_path: Path, capsys) -> None:
    code, _ = drive(tmp_path, standin(tmp_path, "a"), standin(tmp_path, "b", drop="bm/b"))
    out = capsys.readouterr().out
    assert code == 1 and "MISSING" in out


def test_no_benchmark_in_common_is_unusable(tmp_path: Path, capsys) -> None:
    code, _ = drive(
        tmp_path, standin(tmp_path, "a", names="x/1"), standin(tmp_path, "b", names="y/1")
    )
    assert code == 2 and "nothing to compare" in capsys.readouterr().err


def test_exact_filter_matches_only_the_names() -> None:
    import re

    names = ["matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1", "a.b(c)"]
    pattern = re.compile(exact_filter(names))
    assert all(pattern.search(n) for n in names)
    assert not pattern.search("matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:12")
    assert not pattern.search("aXb(c)")


# ---- scripts/ci_gate.sh -------------------------------------------------------------------------

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def standin_valgrind(tmp: Path) -> Path:
    """A folder for PATH with a stand-in `valgrind` that logs its command line to `valgrind.log`
    beside the folder and runs the program bare: the gate's instruction lane is started as it is
    with the real one, and counts nothing, as the real one counts nothing of a stand-in bench
    (test_instruction_lane.py runs the lane under the real valgrind on the real bench), without
    callgrind's seconds per Python start."""
    folder = tmp / "valgrind-bin"
    folder.mkdir(exist_ok=True)
    script = folder / "valgrind"
    script.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> "{tmp / "valgrind.log"}"\n'
        'while [[ $1 == --* ]]; do shift; done\nexec "$@"\n'
    )
    script.chmod(0o755)
    return folder


def gate(cwd_script: Path, tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    full = dict(
        os.environ,
        OUT_DIR=str(tmp / "out"),
        PYTHON=sys.executable,
        PAIRS="10",
        MAX_PAIRS="20",
        PYTHONPATH=str(ROOT / "tools"),
        PATH=f"{standin_valgrind(tmp)}{os.pathsep}{os.environ['PATH']}",
        **env,
    )
    return subprocess.run(
        ["bash", str(cwd_script), *args], capture_output=True, text=True, env=full, timeout=300
    )


def valgrind_calls(tmp: Path) -> list[str]:
    """The programs the stand-in valgrind ran, in the order it was called."""
    lines = (tmp / "valgrind.log").read_text().splitlines()
    return [next(w for w in line.split() if not w.startswith("--")) for line in lines]


@pytest.mark.slow
@needs_bash
def test_ci_gate_paired_mode(tmp_path: Path) -> None:
    a, b = standin(tmp_path, "a", seed="a"), standin(tmp_path, "b", seed="b")
    slow = standin(tmp_path, "slow", slow="1.2", seed="c")
    same = gate(GATE, tmp_path, "--base-bench", a, "--contender-bench", b, "--benchmark_filter=bm/")
    assert same.returncode == 0, same.stderr
    assert (tmp_path / "out" / "paired-compare.md").read_text().startswith("**gate: PASS")
    # Both lanes are reported; stand-ins have no instruction regions: the instruction lane ran
    # both sides, says it counted nothing, and the timing lane decides.
    assert sorted(valgrind_calls(tmp_path)) == [a, b]
    assert "instruction lane: instructions: NOT COUNTED" in same.stdout, same.stdout
    assert "gate: PASS (exit 0): timing pass; instructions cannot judge or count" in same.stdout
    assert "### Instruction lane" in (tmp_path / "out" / "gate.md").read_text()
    # The timing lane alone fails a slower contender; INSTRUCTIONS=off leaves the other out.
    worse = gate(
        GATE,
        tmp_path,
        "--base-bench",
        a,
        "--contender-bench",
        slow,
        "--benchmark_filter=bm/",
        INSTRUCTIONS="off",
    )
    assert worse.returncode == 1, worse.stderr
    assert "instruction lane not run" in worse.stdout, worse.stdout
    assert "gate: FAIL" in worse.stdout and len(valgrind_calls(tmp_path)) == 2
    half = gate(GATE, tmp_path, "--base-bench", a)
    assert half.returncode == 2 and "needs both" in half.stderr


def project(tmp: Path, cmake: str) -> Path:
    """A git repository with this ci_gate.sh (and the common.sh it sources) and a CMake project whose `bench` target copies a
    stand-in (or fails): a --against build that takes a second."""
    repo = tmp / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(GATE, repo / "scripts" / "ci_gate.sh")
    shutil.copy(GATE.parent / "common.sh", repo / "scripts" / "common.sh")  # sourced by it
    (repo / "standin").write_text(STANDIN.format(python=sys.executable, conf="seed=r need_data=1"))
    (repo / "data").mkdir()
    (repo / "data" / "iris.csv").write_text("5.1,3.5,1.4,0.2,0\n")
    (repo / "standin").chmod(0o755)
    (repo / "CMakeLists.txt").write_text(cmake)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    return repo


STANDIN_PROJECT = """cmake_minimum_required(VERSION 3.16)
project(standin NONE)
add_custom_target(bench ALL COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/standin
  ${CMAKE_BINARY_DIR}/benchmarks/bench)
"""


@pytest.mark.slow
@needs_bash
@pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("git") is None, reason="needs cmake and git"
)
def test_ci_gate_against_builds_and_reuses_the_ref(tmp_path: Path) -> None:
    repo = project(tmp_path, STANDIN_PROJECT)
    contender = standin(tmp_path, "contender", seed="c")
    first = gate(
        repo / "scripts" / "ci_gate.sh",
        tmp_path,
        "--against",
        "HEAD",
        "--benchmark_filter=bm/",
        BENCH=contender,
    )
    assert first.returncode == 0, first.stderr + first.stdout
    assert "building HEAD" in first.stderr
    # The instruction lane runs the base through the build's wrapper (its data files), the
    # contender bare.
    calls = valgrind_calls(tmp_path)
    assert len(calls) == 2 and contender in calls, calls
    (wrapper,) = [call for call in calls if call != contender]
    assert wrapper.endswith("/bench-gate"), calls
    second = gate(
        repo / "scripts" / "ci_gate.sh",
        tmp_path,
        "--against",
        "HEAD",
        "--benchmark_filter=bm/",
        BENCH=contender,
        INSTRUCTIONS="off",  # the reuse is the point here; the lane ran above
    )
    assert second.returncode == 0 and "reusing the build" in second.stderr
    # The temporary worktree is gone; only the build is kept.
    listed = subprocess.run(
        ["git", "-C", str(repo), "worktree", "list"], capture_output=True, text=True
    ).stdout
    assert len(listed.strip().splitlines()) == 1


@needs_bash
@pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("git") is None, reason="needs cmake and git"
)
def test_ci_gate_against_a_base_that_fails_to_build(tmp_path: Path) -> None:
    repo = project(
        tmp_path,
        "cmake_minimum_required(VERSION 3.16)\nproject(x NONE)\n"
        'message(FATAL_ERROR "the base is broken")\n',
    )
    contender = standin(tmp_path, "contender")
    result = gate(repo / "scripts" / "ci_gate.sh", tmp_path, "--against", "HEAD", BENCH=contender)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert "failed to build" in last and "the base is broken" in last
    bad = gate(
        repo / "scripts" / "ci_gate.sh", tmp_path, "--against", "no-such-ref", BENCH=contender
    )
    assert bad.returncode == 2 and "not a commit" in bad.stderr


# ---- the gate line's record -------------------------------------------------------------------------


def _ambiguous(*estimates: tuple[float, float, float], margin: float = 0.03):
    """A paired judgement of AMBIGUOUS benchmarks with these (ratio, low, high) estimates."""
    from gpubench_tools.compare.verdict import Judgement, Verdict

    benches = [
        Verdict(f"b{i}", stats.AMBIGUOUS, estimate=stats.Estimate(16, *est, 0.5), pairs=16)
        for i, est in enumerate(estimates)
    ]
    rules = stats.rules_from(margin)
    return Judgement(None, None, benches, "cpu_time", paired=True, rules=rules)  # type: ignore[arg-type]


def test_the_gate_line_states_the_half_margin_of_ambiguous_passes() -> None:
    from gpubench_tools.compare import render

    j = _ambiguous((1.01, 0.97, 1.06), margin=0.05)
    gate = render.gate_record(j)
    assert (j.exit_code, gate.kind, gate.tally) == (0, "pass_ambiguous", ((1, stats.AMBIGUOUS),))
    assert (gate.margin_pct, gate.half_margin_pct) == pytest.approx((5.0, 2.5))
    line = render.gate_line(j)
    assert "beyond the 5% margin" in line and "estimates under +2.5%" in line
    # What the pass did not rule out: the AMBIGUOUS row's interval reaches +6 %.
    assert gate.allowed_pct == pytest.approx(6.0)
    assert line.endswith(
        "(1 ambiguous); not ruled out: up to +6.0% slower (the AMBIGUOUS rows' highest interval end)"
    )


def test_ambiguous_intervals_below_zero_allow_no_slowdown() -> None:
    from gpubench_tools.compare import render

    j = _ambiguous((0.985, 0.95, 0.99), margin=0.02)
    gate = render.gate_record(j)
    assert gate.kind == "pass_ambiguous" and gate.allowed_pct is None
    assert "not ruled out" not in render.gate_line(j)


@pytest.mark.parametrize(
    "estimates, code, kind",
    [
        # Beyond half the margin it may be slower: a pass beside a resolved benchmark only.
        ([(1.02, 0.99, 1.05), (1.00, 0.99, 1.01)], 0, "ambiguous"),
        ([(1.02, 0.99, 1.05)], 3, "unresolved"),
        ([(1.00, 0.95, 1.12)], 3, "wide"),  # the interval still reaches +10 %
        ([(1.00, 0.99, 1.01)], 0, "pass_ambiguous"),
    ],
)
def test_the_gate_line_kind_follows_the_judgement(estimates, code: int, kind: str) -> None:
    from gpubench_tools.compare import render

    j = _ambiguous(*estimates)
    assert (j.exit_code, render.gate_record(j).kind) == (code, kind)
    assert render.gate_record(j).unresolved_pct == pytest.approx(10.0)


def test_a_pass_with_ambiguous_rows_says_the_slowdown_it_did_not_rule_out(
    tmp_path: Path, capsys
) -> None:
    # A row within the half margin whose interval still reaches past it: the gate passes and says
    # how much slower the row may still be (its interval's upper end), beside a row that is SAME.
    rng = np.random.default_rng(7)
    base = list(1e-3 * np.exp(rng.normal(0, 0.001, 12)))
    near = [b * math.exp(d) for b, d in zip(base, rng.normal(0.004, 0.03, 12))]
    steady = list(2e-3 * np.exp(rng.normal(0, 0.001, 12)))
    base_rows, cont_rows = {"bm/near": base, "bm/steady": steady}, {"bm/near": near}
    cont_rows["bm/steady"] = [t * 1.001 for t in steady]
    code, out, _, doc = judged(tmp_path, base_rows, cont_rows, capsys)
    (near_row,) = [b for b in doc["benchmarks"] if b["name"] == "bm/near"]
    assert code == 0 and near_row["verdict"].upper() == "AMBIGUOUS", out
    upper = (near_row["interval"][1] - 1) * 100
    assert f"not ruled out: up to {upper:+.1f}% slower" in doc["gate"], doc["gate"]
    # A plain pass (no AMBIGUOUS row) says nothing of the kind.
    code, _, _, doc = judged(tmp_path, {"bm/steady": steady}, {"bm/steady": steady}, capsys)
    assert code == 0 and "not ruled out" not in doc["gate"]


def test_a_gpu_row_is_judged_on_its_gpu_clock() -> None:
    # Google Benchmark's UseManualTime rows end in /manual_time and report the CUDA-event time as
    # real_time; their cpu_time is the host thread waiting. The gate's clock is cpu_time.
    gpu = "matmul/gpu/cublas_kernel/dtype:fp32/m:64/n:64/k:64/manual_time"
    assert paired.clock_of(gpu, "cpu_time") == "real_time"
    assert paired.clock_of("matmul/cpu/openblas/dtype:fp32/threads:1", "cpu_time") == "cpu_time"
    assert paired.clock_of("bm/copy/manual_time/threads:2", "cpu_time") == "real_time"
    assert paired.clock_of("bm/manual_time_like", "cpu_time") == "cpu_time"
    row = load_report_row(gpu, cpu_s=4e-3, real_s=1e-3)
    assert paired._time(row, "cpu_time") == pytest.approx(1e-3)
    cpu = load_report_row("bm/cpu", cpu_s=4e-3, real_s=5e-3)
    assert paired._time(cpu, "cpu_time") == pytest.approx(4e-3)


def load_report_row(name: str, cpu_s: float, real_s: float):
    """One repetition row as the reader gives it (benchjson's BenchRow)."""
    out = dict(row(name, 0, cpu_s), real_time=real_s * 1e9)
    return load_report_from(out)


def load_report_from(bench_row: dict):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "one.json"
        path.write_text(json.dumps({"context": {}, "benchmarks": [bench_row]}))
        (parsed,) = load_report(str(path)).rows
    return parsed


def test_the_fastest_repetition_of_a_gpu_row_is_its_fastest_on_the_gpu_clock() -> None:
    from gpubench_tools.compare.interleave import PairedRun

    name = "bm/gpu/manual_time"
    slow_gpu = [("name", name), ("cpu_time", 1.0), ("real_time", 9.0), ("run_type", "iteration")]
    fast_gpu = [("name", name), ("cpu_time", 5.0), ("real_time", 2.0), ("run_type", "iteration")]
    run = PairedRun(["base"], ["contender"], Path("."))
    (kept,) = run.keep([slow_gpu, fast_gpu], 0)
    assert dict(kept)["real_time"] == 2.0


@pytest.mark.slow
@needs_bash
def test_the_installed_gate_runs_both_lanes_of_two_programs(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """`gpubench-gate` (gpubench_tools/gate.py) on two stand-in programs: the timing lane, the
    instruction lane under a stand-in valgrind (which counts nothing of a stand-in), the combined
    verdict and its files; a slower contender fails."""
    from gpubench_tools.gate import main as gate_main

    monkeypatch.setenv("PATH", f"{standin_valgrind(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    a, b = standin(tmp_path, "a", seed="a"), standin(tmp_path, "b", seed="b")
    out = tmp_path / "out"
    common = ["--benchmark_filter=bm/", "--pairs", "10", "--max-pairs", "20", "--out-dir", str(out)]
    code = gate_main(["--base-bench", a, "--contender-bench", b, *common])
    said = capsys.readouterr().out
    assert code == 0, said
    assert sorted(valgrind_calls(tmp_path)) == [a, b]
    assert "gate: PASS (exit 0): timing pass; instructions cannot judge or count" in said
    for name in ("paired-compare.md", "paired-compare.json", "instructions-compare.md", "gate.md"):
        assert (out / name).is_file(), name
    slow = standin(tmp_path, "slow", slow="1.2", seed="c")
    code = gate_main(
        ["--base-bench", a, "--contender-bench", slow, "--instructions", "off", *common]
    )
    said = capsys.readouterr().out
    assert code == 1 and "instruction lane not run" in said and "gate: FAIL" in said
    assert len(valgrind_calls(tmp_path)) == 2
