"""The counter schema: the Python declaration against `bench --schema`, against every counter the
committed JSON files carry, and as the source of the compare tool's directions."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

from gpubench_tools import schema
from gpubench_tools.benchjson import GBENCH_KEYS, parse_label
from gpubench_tools.compare.config import CompareConfig

# Every committed file of bench rows: the reference runs and the tools' test fixtures.
COMMITTED = [
    path
    for path in sorted(REPO.glob("reports/baselines/*.json")) + sorted(FIXTURES.glob("*.json"))
    if "benchmarks" in json.loads(path.read_text())
]


def test_bench_schema_matches_the_python_schema() -> None:
    """`$GPUBENCH_BENCH --schema` must print exactly the declaration of gpubench_tools.schema."""
    bench = os.environ.get("GPUBENCH_BENCH")
    if not bench:
        pytest.skip("GPUBENCH_BENCH is not set (scripts/test.sh sets it to the built bench)")
    try:
        proc = subprocess.run([bench, "--schema"], capture_output=True, text=True, timeout=120)
    except OSError as exc:
        pytest.fail(f"GPUBENCH_BENCH={bench} cannot be run: {exc}")
    assert proc.returncode == 0, (
        f"{bench} --schema exited {proc.returncode}, so the Python schema cannot be checked "
        f"against it; stderr: {proc.stderr.strip()[-600:]}"
    )
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        pytest.fail(f"{bench} --schema did not print JSON ({exc}); stdout: {proc.stdout[:300]!r}")
    # Counter order does not matter (dicts), label key order does (it is the order of the label);
    # pytest names every difference.
    assert doc == schema.schema_document(), "the Python schema and bench --schema disagree"


def _row_keys(path: Path) -> tuple[set[str], set[str]]:
    """(every key of every row, every label key) of one bench JSON file. Rows are read as
    key/value pairs so that a key written twice (older files' second "threads") is seen."""
    doc = json.loads(path.read_text(), object_pairs_hook=lambda pairs: pairs)
    rows = next(value for key, value in doc if key == "benchmarks")
    keys: set[str] = set()
    labels: set[str] = set()
    for row in rows:
        for key, value in row:
            keys.add(key)
            if key == "label" and isinstance(value, str):
                labels |= set(parse_label(value))
    return keys, labels


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(REPO)))
def test_every_counter_of_the_committed_files_is_in_the_schema(path: Path) -> None:
    keys, labels = _row_keys(path)
    # A member of a declared family (t_op:<operation>) is declared through its prefix.
    unknown = sorted(k for k in keys - GBENCH_KEYS if schema.counter(k) is None)
    assert not unknown, f"{path.name}: counters the schema does not declare: {unknown}"
    unknown_labels = sorted(labels - set(schema.LABEL_KEYS))
    assert (
        not unknown_labels
    ), f"{path.name}: label keys the schema does not declare: {unknown_labels}"


def test_committed_files_were_found() -> None:
    names = {p.name for p in COMMITTED}
    assert {"ci-cpu.json", "h100-80gb-hbm3-matmul.json", "h100.json", "cpu_only.json"} <= names


def test_document_shape() -> None:
    doc = schema.schema_document()
    assert list(doc) == ["schema_version", "counters", "counter_prefixes", "label_keys"]
    assert doc["schema_version"] == 1
    assert doc["label_keys"][:2] == ["workload", "backend"]
    assert len(doc["label_keys"]) == len(set(doc["label_keys"]))
    for key, entry in [*doc["counters"].items(), *doc["counter_prefixes"].items()]:
        assert set(entry) == {"unit", "direction"}, key
        assert entry["direction"] in schema.DIRECTIONS, key
    # No declared counter falls into a prefix family (a key would have two declarations).
    assert not [k for k in doc["counters"] if k.startswith(tuple(doc["counter_prefixes"]))]
    # Google Benchmark's own keys are never counters of ours.
    assert not set(doc["counters"]) & GBENCH_KEYS


def test_agreed_entries() -> None:
    assert schema.counter("t_epoch") == schema.CounterSpec("s", "smaller")
    assert schema.counter("FLOP/s") == schema.CounterSpec("flop/s", "bigger")
    assert schema.counter("pct_peak") == schema.CounterSpec("%", "bigger")
    assert schema.counter("flop") == schema.CounterSpec("flop", "none")
    assert schema.counter("samples_per_s") == schema.CounterSpec("1/s", "bigger")
    assert schema.counter("skipped_steps") == schema.CounterSpec("count", "smaller")
    assert schema.counter("test_accuracy") == schema.CounterSpec("1", "bigger")
    assert schema.counter("max_error_over_bound") == schema.CounterSpec("1", "smaller")
    assert schema.counter("threads") is None  # Google Benchmark's key; ours is blas_threads
    # A family declared by prefix: the per-operation times of a profiled step.
    assert schema.counter("t_op:conv1.gemm") == schema.CounterSpec("s", "smaller")
    assert schema.counter("t_op") is None
    assert schema.is_seconds("t_sync") and not schema.is_seconds("bytes_per_s")


def test_compare_directions_come_from_the_schema() -> None:
    config = CompareConfig(exact_counters=[])
    better = {"smaller": "lower", "bigger": "higher", "none": "info"}
    for key, spec in schema.COUNTERS.items():
        assert config.direction(key) == better[spec.direction], key
    assert config.direction("t_op:forward") == "lower"
    # Nothing is guessed from a name: a counter the schema does not know is only shown.
    assert config.direction("t_unknown") == "info"
    assert config.direction("widgets_per_s") == "info"
    # The config still overrides one counter, and exact counters stay exact.
    assert CompareConfig(counter_direction={"kernels": "lower"}).direction("kernels") == "lower"
    assert CompareConfig().direction("flop") == "exact"
