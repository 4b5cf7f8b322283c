"""Rows and files in Google Benchmark's JSON format, for the PyTorch reference scripts, so the
report and compare tools read their results like any `bench` output."""

from __future__ import annotations

import json
from typing import Any


def benchmark_row(
    name: str, seconds: float, iterations: int, label: str, counters: dict[str, float]
) -> dict[str, Any]:
    """One iteration row: `seconds` per iteration, reported in microseconds like `bench`."""
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
        **counters,
    }


def write_benchmark_file(path: str, context: dict[str, str], rows: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as file:
        json.dump({"context": context, "benchmarks": rows}, file, indent=1)
