"""The output contract of `bench`: the benchmark names and the counter keys and label pairs of
today's rows (committed under tests/contract/ from the binary before the measurement core was
rewritten) must all still be there. New names, keys and label pairs may be added; none removed or
renamed. Every counter a row writes must be declared in `bench --schema`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GOOGLE_BENCHMARK_FIELDS = {
    "name",
    "run_name",
    "run_type",
    "repetitions",
    "repetition_index",
    "threads",
    "iterations",
    "real_time",
    "cpu_time",
    "time_unit",
    "family_index",
    "per_family_instance_index",
    "label",
    "error_occurred",
    "error_message",
    "aggregate_name",
    "aggregate_unit",
}
# A small run that still has a row of every CPU family (GPU families too where a GPU is visible).
SHORT_FILTER = (
    "matmul/cpu/openblas/dtype:fp(32|64)/m:64/n:64/k:64/|mlp/.*/data:iris/|"
    "mlp/.*/data:digits/batch:64/hidden:32/|overhead/(launch/roundtrip|h2d/pinned/bytes:4096/|sync)|"
    "matmul/gpu/cublas_(kernel|e2e)/dtype:fp32/(host:pinned/)?m:256/n:256/k:256/|"
    "memory/gpu/largest_batch/net:cnn/|cnn/cpu/openblas/data:synthetic/batch:1/"
)


def bench_binary() -> Path:
    path = os.environ.get("GPUBENCH_BENCH")
    if not path:
        pytest.skip("GPUBENCH_BENCH is not set (scripts/test.sh sets it to the built binary)")
    return Path(path)


def family(name: str) -> str:
    """The name with its numeric values removed: the rows of one family share their keys."""
    return re.sub(r":(\d[\dx]*)(?=/|$)", "", name.replace("/manual_time", ""))


def normalised(name: str) -> str:
    """Thread counts other than 1 are "all cores", which differs between machines."""
    return re.sub(
        r"/threads:(\d+)", lambda m: m.group(0) if m.group(1) == "1" else "/threads:all", name
    )


@pytest.fixture(scope="module")
def short_run(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("contract") / "short.json"
    subprocess.run(
        [
            str(bench_binary()),
            f"--benchmark_filter={SHORT_FILTER}",
            "--benchmark_min_time=0.001",
            f"--benchmark_out={out}",
            "--benchmark_out_format=json",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return json.loads(out.read_text())["benchmarks"]


def test_every_name_of_the_full_sweep_is_still_there() -> None:
    listing = subprocess.run(
        [str(bench_binary()), "--full", "--list-all"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.split()
    names = {normalised(name) for name in listing}
    committed = (HERE / "names_full.txt").read_text().split()
    if (os.cpu_count() or 1) == 1:  # "all cores" is thread count 1: those rows merge
        committed = [name for name in committed if "threads:all" not in name]
    missing = [name for name in committed if name not in names]
    assert len(committed) > 1000, "the committed name list is truncated"
    assert not missing, f"{len(missing)} names vanished, e.g. {missing[:5]}"


def test_rows_keep_their_counter_keys_and_label_pairs(short_run: list[dict]) -> None:
    committed = json.loads((HERE / "rows.json").read_text())
    checked = 0
    problems = []
    for row in short_run:
        expected = committed.get(family(row["name"]))
        # Rows of families added since are not part of this contract: one may be skipped where the
        # machine lacks what it needs (bf16 products need AVX512_BF16 and an OpenBLAS with sbgemm).
        if expected is None:
            continue
        if row.get("error_occurred"):
            problems.append(f"{row['name']}: {row.get('error_message')}")
            continue
        checked += 1
        missing_keys = set(expected["counters"]) - set(row)
        missing_labels = set(expected["label"]) - set(row.get("label", "").split())
        if missing_keys or missing_labels:
            problems.append(f"{row['name']}: lost {sorted(missing_keys | missing_labels)}")
    assert checked >= 6, f"only {checked} rows matched a committed family: the filter is stale"
    assert not problems, "\n".join(problems)


def test_labels_state_workload_and_backend(short_run: list[dict]) -> None:
    for row in short_run:
        pairs = dict(pair.split("=", 1) for pair in row.get("label", "").split())
        assert pairs.get("workload") == row["name"].split("/")[0], row["name"]
        assert pairs.get("backend") in {"cpu", "gpu"}, row["name"]


def test_every_counter_is_declared_in_the_schema(short_run: list[dict]) -> None:
    schema = json.loads(
        subprocess.run(
            [str(bench_binary()), "--schema"], check=True, capture_output=True, text=True
        ).stdout
    )
    declared = set(schema["counters"])
    prefixes = tuple(schema["counter_prefixes"])
    for row in short_run:
        undeclared = {
            key
            for key in set(row) - GOOGLE_BENCHMARK_FIELDS - declared
            if not key.startswith(prefixes)
        }
        assert not undeclared, f"{row['name']} writes undeclared counters {sorted(undeclared)}"
        label_keys = {pair.split("=", 1)[0] for pair in row.get("label", "").split()}
        assert label_keys <= set(schema["label_keys"]), row["name"]


def test_training_rows_share_their_keys(short_run: list[dict]) -> None:
    # One key per quantity on every training row, whatever the workload: a reader never branches.
    training = [
        row
        for row in short_run
        if row["name"].split("/")[0] in ("mlp", "cnn") and not row.get("error_occurred")
    ]
    assert {row["name"].split("/")[0] for row in training} >= {"mlp", "cnn"}
    for row in training:
        assert {"t_step", "steps", "samples_per_s"} <= set(row), row["name"]
        assert row["t_step"] > 0 and row["steps"] >= 1, row["name"]
        assert row["samples_per_s"] * row["t_step"] == pytest.approx(row["batch"], rel=1e-9)
        if row["name"].startswith("mlp/"):
            assert row["t_epoch"] == row["t_step"] and row["epochs"] == row["steps"], row["name"]


def test_rows_with_known_work_state_its_traffic(short_run: list[dict]) -> None:
    # Work is flop and bytes: every row that counts flop also carries bytes_moved by its
    # minimum-traffic model and the arithmetic intensity flop / bytes_moved (docs/workloads.md).
    working = [row for row in short_run if row.get("flop", 0) > 0 and not row.get("error_occurred")]
    assert {row["name"].split("/")[0] for row in working} >= {"matmul", "mlp", "cnn"}
    for row in working:
        assert row.get("bytes_moved", 0) > 0, row["name"]
        assert row["arithmetic_intensity"] == pytest.approx(
            row["flop"] / row["bytes_moved"], rel=1e-9
        ), row["name"]
        if row["name"].startswith("matmul/"):
            # A and B read once, C written once (beta = 0), at the dtype's element size.
            size = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}[
                re.search(r"dtype:(\w+)", row["name"]).group(1)
            ]
            m, n, k = row["m"], row["n"], row["k"]
            assert row["bytes_moved"] == (m * k + k * n + m * n) * size, row["name"]


def test_profiled_operations_state_their_work(short_run: list[dict]) -> None:
    # Each t_op:<operation> of a CNN row has flop_op:<operation> and bytes_op:<operation> beside
    # it, and the operations' flop add up to the step's (the products are the flop). A GPU row's
    # t_op:launch_gaps is the device waiting between operations: no work, no model.
    profiled = [
        row
        for row in short_run
        if row["name"].startswith("cnn/") and any(key.startswith("t_op:") for key in row)
    ]
    assert profiled, "no CNN row with a per-operation profile ran"
    for row in profiled:
        operations = {key[len("t_op:") :] for key in row if key.startswith("t_op:")}
        operations.discard("launch_gaps")
        for prefix in ("flop_op:", "bytes_op:"):
            written = {key[len(prefix) :] for key in row if key.startswith(prefix)}
            assert written == operations, (row["name"], prefix, sorted(written ^ operations))
        step_flop = sum(row[f"flop_op:{operation}"] for operation in operations)
        assert step_flop == pytest.approx(row["flop"] / row["steps"], rel=1e-12), row["name"]
        assert all(row[f"bytes_op:{operation}"] > 0 for operation in operations), row["name"]


def test_progress_goes_to_stderr_only(tmp_path: Path) -> None:
    out = tmp_path / "progress.json"
    run = subprocess.run(
        [
            str(bench_binary()),
            "--benchmark_filter=matmul/cpu/openblas/dtype:fp32/m:(16|32)/n:(16|32)/k:(16|32)/",
            "--benchmark_min_time=0.001",
            f"--benchmark_out={out}",
            "--benchmark_out_format=json",
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "GPUBENCH_PROGRESS_SECONDS": "0"},
        timeout=120,
    )
    rows = json.loads(out.read_text())["benchmarks"]
    progress = [line for line in run.stderr.splitlines() if " benchmarks, " in line]
    assert len(rows) == 4
    assert progress[-1].startswith(f"gpubench: {len(rows)}/{len(rows)} benchmarks, ")
    assert len(progress) == len(rows) + 1  # one per benchmark, then the final line
    assert "benchmarks, " not in run.stdout
    assert all(row["name"] in run.stdout for row in rows)  # the console table is still there
