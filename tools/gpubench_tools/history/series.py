"""The stored runs as time series: per machine its runs in order, per run and benchmark the times
of the repetitions. Loaded once from the store; the check and the charts read only this."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..timing import choose_time
from .store import BenchmarkInfo, Failure, HistoryStore, Machine, Run

__all__ = ["History"]


@dataclass
class History:
    machines: dict[int, Machine]
    runs_by_machine: dict[int, list[Run]]  # oldest first
    benchmarks: dict[str, BenchmarkInfo]
    # (run id, benchmark) -> [(real_time_s, cpu_time_s or None)], one pair per repetition
    times: dict[tuple[int, str], list[tuple[float, float | None]]]
    # (run id, benchmark) -> why it has no samples in that run (failed or skipped)
    failures: dict[tuple[int, str], str] = field(default_factory=dict)

    @classmethod
    def load(cls, store: HistoryStore, name_filter: str | None = None) -> "History":
        """Everything in the store, or only the benchmarks whose name matches `name_filter`."""
        pattern = re.compile(name_filter) if name_filter else None

        def wanted(name: str) -> bool:
            return pattern is None or pattern.search(name) is not None

        machines = {m.id: m for m in store.machines()}
        runs_by_machine: dict[int, list[Run]] = {m: [] for m in machines}
        for run in store.runs():
            runs_by_machine[run.machine_id].append(run)
        times: dict[tuple[int, str], list[tuple[float, float | None]]] = {}
        for run_id, sample in store.samples():
            if wanted(sample.benchmark):
                times.setdefault((run_id, sample.benchmark), []).append(
                    (sample.real_time_s, sample.cpu_time_s)
                )
        failures: dict[tuple[int, str], str] = {}
        for run_id, failure in store.failures():
            if wanted(failure.benchmark):
                failures.setdefault((run_id, failure.benchmark), failure.reason)
        benchmarks = {n: b for n, b in store.benchmarks().items() if wanted(n)}
        return cls(machines, runs_by_machine, benchmarks, times, failures)

    @property
    def run_count(self) -> int:
        return sum(len(runs) for runs in self.runs_by_machine.values())

    def time_source(self, benchmark: str, time: str) -> str:
        info = self.benchmarks.get(benchmark)
        return choose_time(benchmark, info.threads if info else None, time)

    def values(self, run_id: int, benchmark: str, time: str) -> list[float]:
        """Seconds per iteration of each repetition, on the clock `time` selects for it."""
        pairs = self.times.get((run_id, benchmark), [])
        if self.time_source(benchmark, time) == "real_time":
            return [real for real, _ in pairs]
        return [cpu for _, cpu in pairs if cpu is not None]

    def failure(self, run_id: int, benchmark: str) -> str | None:
        """Why the benchmark has no samples in this run, when the run recorded it as failed."""
        return self.failures.get((run_id, benchmark))

    def series(self, machine_id: int, benchmark: str) -> list[Run]:
        """The runs of the machine that measured the benchmark (or recorded it failing), oldest
        first. A machine's runs need not all hold the same benchmarks: one commit is often
        measured as several files (the matmul sweep, the MLP sweep)."""
        return [
            run
            for run in self.runs_by_machine.get(machine_id, [])
            if (run.id, benchmark) in self.times or (run.id, benchmark) in self.failures
        ]

    def benchmarks_of_machine(self, machine_id: int) -> list[str]:
        run_ids = {run.id for run in self.runs_by_machine.get(machine_id, [])}
        names = {name for run_id, name in [*self.times, *self.failures] if run_id in run_ids}
        return sorted(names)
