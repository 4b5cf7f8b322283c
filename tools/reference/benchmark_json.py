"""Rows and files in Google Benchmark's JSON format, for the PyTorch reference scripts, so the
report and compare tools read their results like any `bench` output."""

from __future__ import annotations

import json
from typing import Any


def _iteration_row(name: str, label: str, iterations: int, seconds: float) -> dict[str, Any]:
    """What Google Benchmark writes for every row of one repetition: `seconds` per iteration,
    reported in microseconds like `bench`."""
    return {
        "name": name,
        "run_name": name,
        "run_type": "iteration",
        "repetitions": 1,
        "repetition_index": 0,
        "threads": 1,
        "iterations": iterations,
        "real_time": seconds * 1e6,
        "cpu_time": seconds * 1e6,
        "time_unit": "us",
        "label": label,
    }


def benchmark_row(
    name: str, seconds: float, iterations: int, label: str, counters: dict[str, float]
) -> dict[str, Any]:
    """One iteration row: `seconds` per iteration, with the row's counters."""
    return {**_iteration_row(name, label, iterations, seconds), **counters}


def skipped_row(name: str, label: str, message: str) -> dict[str, Any]:
    """A row that did not run, as Google Benchmark writes a SkipWithError: the report lists it as
    skipped when the message starts with one of row_rules.SKIP_PREFIXES ("not supported on this
    machine: ...")."""
    return {
        **_iteration_row(name, label, 0, 0.0),
        "error_occurred": True,
        "error_message": message,
    }


def write_benchmark_file(path: str, context: dict[str, str], rows: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as file:
        json.dump({"context": context, "benchmarks": rows}, file, indent=1)
