"""One loader: bench JSON files (any number, old files included) into one pandas table.

`load_table(paths, gpu_reference)` returns a `Table`:

- `rows`: one row per measured repetition (Google Benchmark's `iteration` rows that ran and hold
  sound values; a file written with --benchmark_report_aggregates_only gives its median, else
  mean, aggregate as a single sample). Columns: `machine` (index into `machines`), `file`,
  `name` (the run name), `label`, `repetition`, `iterations`, `real_time_s`, `cpu_time_s`; every
  label pair (`workload`, `backend`, `variant`, `dtype`, `shape`, `precision`, `host`, ...), every
  counter, the `key:value` parts of the name that neither gives (older files), and the machine's
  context as `context.<key>` columns.
- `problems`: one row per benchmark that failed, was skipped, or wrote values that cannot be a
  measurement (`file`, `name`, `backend`, `status`, `reason`).
- `machines`: one row per machine: `cpu`, `gpu` (None without one), `files`, `tag` (set where
  two machines share device names), `gpu_reference` (its GPU rows come from a reference run),
  and for such a run `gpu_files`, `gpu_date`, `gpu_commit` and `gpu_same_host`.

Rows are classified by their label's `workload` and `backend`; files written before the label
had them are classified by the name (`<workload>/<backend>/...`, every `overhead/` probe on the
GPU). Files whose contexts describe the same hardware are one machine. A run without GPU rows
can borrow its GPU side from another machine's run: its rows then hold this run's CPU rows and
the reference's GPU rows, with `measured_on` saying whose each row is.

`gpu_benchmark_count` counts the GPU benchmarks of a run (`python -m gpubench_tools --gpu-rows
FILE...` prints it: how the quick start decides whether to add the reference).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from .benchjson import INVALID, VALID, BenchJsonError, BenchReport, BenchRow, cut_off_notes
from .benchjson import invalid_groups, invalid_rows, iteration_rows, load_report
from .conditions import DISTURBED, QUIET, UNKNOWN
from .row_rules import skip_reason
from .schema import counter, usable_counter
from .policy import FAILED_ROW, MALFORMED_ROW, MIN_UNDISTURBED, SKIPPED_ROW, UNSOUND_ROW
from .policy import CUT_OFF, INTERRUPTED, action, file_situation
from .status import Said, said


def num(frame: pd.DataFrame, column: str) -> pd.Series:
    """A column as floats (NaN where absent or not a number): the loader's one conversion
    (`load_table` types every counter with it, once)."""
    if column not in frame:
        return pd.Series(float("nan"), index=frame.index, dtype=float)
    return pd.to_numeric(frame[column], errors="coerce").astype(float)


def per_step(rows: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """`rows` with the phase counters `columns` per training step: the trainers write them as
    totals over the run where t_wall / steps is t_step (within 10 %), and only there divide by
    `steps`; a file whose counters are already per step keeps them."""
    steps, t_step = num(rows, "steps"), num(rows, "t_step")
    totals = (num(rows, "t_wall") / steps - t_step).abs() <= 0.1 * t_step
    scale = steps.where(totals, 1.0).fillna(1.0)
    return rows.assign(**{c: num(rows, c) / scale for c in columns})


THIS_RUN, REFERENCE_RUN = "this run", "reference run"
# The context figures the tools compute with, typed as numbers at load: the peaks, the cores and
# the memory bandwidths (the roofs, roofline.py).
_NUMERIC_CONTEXT = re.compile(
    r"^context\.(gpu_peak_\w+_flops|cpu_peak_\w+_flops|cpu_physical_cores"
    r"|\w+_bandwidth_\w*bytes_per_s|gpu_energy_\w+_s)$"
)
# A benchmark that failed, was skipped or is invalid: a row of Table.problems.
_PROBLEM_COLUMNS = ("file", "name", "backend", "status", "reason")

# The columns of file_rows, in order.
_FILE_ROW_COLUMNS = ["name", "label", "run_type", "aggregate_name", "repetition", "iterations"]
_FILE_ROW_COLUMNS += ["real_time_s", "cpu_time_s", "threads", "error", "status", "invalid"]
_FILE_ROW_COLUMNS += ["conditions", "counters"]

# The label keys every row is given, with the value a file that predates the key implies.
_LABEL_DEFAULTS = {"dtype": "fp32", "precision": "fp32"}


@dataclass
class Table:
    rows: pd.DataFrame
    problems: pd.DataFrame
    machines: pd.DataFrame
    # What the reader found that a tool may say, as (policy situation, note): a cut-off file,
    # invalid rows, failed and skipped ones; None for the table's own notes (a benchmark in two
    # files, a reference not used). Each note is data (a macro of templates/words.j2 and its
    # values): the rendering layer words it (wording.note_lines).
    notes: list[tuple[str | None, Said]] = field(default_factory=list)

    @property
    def cut_off(self) -> list[Said]:
        """The notes of the files whose run did not finish (interrupted by a signal, or
        truncated), the GPU reference's included, one line per cause: what the report says at
        its top, before the numbers they limit."""
        return [note for s, note in self.notes if s in (CUT_OFF, INTERRUPTED)]

    def said(self, tool: str) -> list[Said]:
        """The notes `tool` says (policy Action.says); the table's own notes always."""
        return [note for s, note in self.notes if s is None or action(tool, s).says]


def file_rows(report: BenchReport) -> pd.DataFrame:
    """Every benchmark row of one file as read, in file order, for the tools that judge rows one
    by one (compare, history, export) rather than plot measurements: `name` (the run name),
    `label`, `run_type`, `aggregate_name`, `repetition` (None without one), `iterations`,
    `real_time_s`, `cpu_time_s` (NaN where absent or invalid), `threads` (the BLAS thread-count
    counter, NaN without one), `error` (the message of a row that did not run), `status`
    (measured, failed, skipped or invalid, by benchjson's rules), `invalid` (why an invalid row
    is, naming the field and its value as the file wrote it: benchjson's reason), `conditions` (disturbed, quiet
    or conditions unknown: conditions.condition_of) and `counters` (a dict of the values as read: a
    NaN counter is an invalid value, an absent one no value)."""
    records = [
        vars(row)
        | {"name": row.run_name, "repetition": row.repetition_index, "conditions": row.conditions}
        | {"threads": row.counters.get("threads", float("nan"))}
        | {"status": "measured" if row.status == VALID else row.status}
        for row in report.rows
    ]
    numbers = {"iterations": int, "real_time_s": float, "cpu_time_s": float, "threads": float}
    return pd.DataFrame(records, columns=_FILE_ROW_COLUMNS, dtype=object).astype(numbers)


def short_gpu_name(name: str) -> str:
    return re.sub(r"^NVIDIA\s+", "", name.strip()) or name


def short_cpu_name(name: str) -> str:
    text = re.sub(r"\((R|TM|tm|r)\)", "", name)
    text = re.sub(r"\s+CPU\b(?=\s+\S)", "", text)  # "Xeon(R) CPU E5-2680" -> "Xeon E5-2680"
    text = re.sub(r"\s*@.*$", "", text)
    return re.sub(r"\s+", " ", text).strip() or name


# What names the host of a run: its CPU model, logical CPU count and host name.
_HOST_KEYS = ("cpu_model", "cpu_logical_cpus", "host_name")


def _ctx_str(context: dict[str, Any], key: str) -> str | None:
    value = context.get(key)
    text = None if value is None else str(value).strip()
    return text or None


def same_machine(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two contexts describe the same hardware: the same GPU, and the same CPU model, logical
    CPU count and host name where both record them (PyTorch reference files name the GPU but
    not the CPU). A context naming neither a GPU nor a CPU identifies nothing and never matches;
    without a GPU, the CPU model must be on both."""
    gpu = _gpu_name(a)
    host = [(_ctx_str(a, key), _ctx_str(b, key)) for key in _HOST_KEYS]
    if gpu != _gpu_name(b) or (gpu is None and None in host[0]):
        return False
    return all(None in pair or pair[0] == pair[1] for pair in host)


def _same_host(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(_ctx_str(a, k) is not None and _ctx_str(a, k) == _ctx_str(b, k) for k in _HOST_KEYS)


def _classified(row: BenchRow) -> dict[str, str | None]:
    """The row's `workload`, `backend` and `variant`: its label's, else (a file written before the
    label had them) its name's `<workload>/<backend>/<variant>/...` parts (eager, cublas_e2e,
    ...), every `overhead/` probe on the GPU."""
    labels, parts = row.labels, row.run_name.split("/") + [None, None]
    by_name = parts[1] in ("cpu", "gpu")
    backend = "gpu" if parts[0] == "overhead" else parts[1] if by_name else None
    return dict(
        workload=labels.get("workload") or parts[0] or None,
        backend=(labels["backend"] or None) if "backend" in labels else backend,
        variant=labels.get("variant") or (parts[2] if by_name else None),
    )


def _name_fields(run_name: str) -> dict[str, Any]:
    """The `key:value` parts of a name, numbers as numbers ("hidden:512x2" stays a string)."""
    out: dict[str, Any] = {}
    for part in run_name.split("/"):
        key, sep, value = part.partition(":")
        if sep and key:
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = value
    return out


def _record(row: BenchRow, machine: int, path: str, measured_on: str) -> dict[str, Any]:
    record: dict[str, Any] = {
        key: value for key, value in _name_fields(row.run_name).items() if key not in row.counters
    }
    record.update(_LABEL_DEFAULTS)
    record.update(row.labels)
    # A NaN or absurd counter (a diverged final_loss) is no number to plot or fit: the row goes
    # without it and keeps its time.
    record.update({k: v for k, v in row.counters.items() if usable_counter(v)})
    # A full-batch trainer's epoch is one SGD step; files written before every training row had
    # `t_step` and `steps` say it only as `t_epoch` and `epochs`.
    for step_key, epoch_key in (("t_step", "t_epoch"), ("steps", "epochs")):
        if step_key not in record and epoch_key in record:
            record[step_key] = record[epoch_key]
    record.update(machine=machine, measured_on=measured_on, file=path, name=row.run_name)
    record.update(label=row.label, repetition=row.repetition_index, conditions=row.conditions)
    record.update(iterations=row.iterations, real_time_s=row.real_time_s)
    return record | dict(cpu_time_s=row.cpu_time_s, **_classified(row))


def _measured(report: BenchReport) -> list[BenchRow]:
    """Iteration rows; for a benchmark that has none, its median (else mean) aggregate."""
    rows = iteration_rows(report)
    have = {(r.run_name, r.label) for r in rows}
    for wanted in ("median", "mean"):
        for r in report.rows:
            if r.run_type == "aggregate" and r.aggregate_name == wanted and r.usable:
                if (r.run_name, r.label) not in have:
                    have.add((r.run_name, r.label))
                    rows.append(r)
    return rows


def _problems(report: BenchReport) -> list[dict[str, Any]]:
    """Failed, skipped and invalid benchmarks of one file: one entry per benchmark, not per
    repetition."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for row in report.rows:
        status = row.status
        # An error row counts once per benchmark, by its repetitions (not its aggregates).
        if status == INVALID or (status != VALID and row.run_type == "iteration"):
            # an error row's whole message: the report shows it once per group
            reason = row.invalid if status == INVALID else row.error
            values = (report.path, row.run_name, _classified(row)["backend"], status, reason)
            found.setdefault((row.run_name, status), dict(zip(_PROBLEM_COLUMNS, values)))
    return list(found.values())


def _file_notes(
    report: BenchReport,
    problems: list[dict[str, Any]],
    invalid: list[BenchRow],
    run: str = "the run",
) -> list[tuple[str | None, Said]]:
    """What the reader said of one file: that `run` (whose rows these are) was cut off or
    interrupted, its `invalid` rows (not used), and one line per status of its `problems`: how
    many benchmarks failed, and how many were skipped and why (the reasons' common prefixes, not
    every message)."""
    notes = [(file_situation(report), note) for note in cut_off_notes(report, run)]
    if invalid:
        situation = MALFORMED_ROW if any(r.malformed for r in invalid) else UNSOUND_ROW
        notes.append((situation, said("unused_rows", path=report.path, **invalid_groups(invalid))))
    for situation, status in ((FAILED_ROW, "failed"), (SKIPPED_ROW, "skipped")):
        mine = [p for p in problems if p["status"] == status]
        reasons = dict.fromkeys(skip_reason(p["reason"]) for p in mine)
        if mine:
            found = dict(path=report.path, status=status, count=len(mine), reasons=reasons)
            notes.append((situation, said("problems", **found)))
    return notes


def _machine_groups(paths: Sequence[str]) -> list[list[BenchReport]]:
    """Load every file (BenchJsonError propagates) and group the files of one machine."""
    groups: list[list[BenchReport]] = []
    for report in (load_report(path) for path in paths):
        home = next((g for g in groups if same_machine(g[0].context, report.context)), [])
        if not home:  # the first file of its machine
            groups.append(home)
        home.append(report)
    return groups


def _shared_note(measured: dict[str, list[BenchRow]]) -> list[tuple[None, Said]]:
    """A benchmark in two files of one machine: its rows are pooled as repetitions; say so."""
    names_in: dict[str, list[str]] = {}
    for path, rows in measured.items():
        for name in sorted({r.run_name for r in rows}):
            names_in.setdefault(name, []).append(path)
    shared = [name for name, files in names_in.items() if len(files) > 1]
    if not shared:
        return []
    files = sorted({f for name in shared for f in names_in[name]})
    return [(None, said("shared", count=len(shared), example=shared[0], files=files))]


def _gpu_name(context: dict[str, Any]) -> str | None:
    gpu = _ctx_str(context, "gpu")
    return None if gpu is None or gpu.lower() == "none" else gpu


def load_table(paths: Sequence[str], gpu_reference: Sequence[str] = ()) -> Table:
    """Load every file (BenchJsonError propagates) into one Table (see the module docstring).

    `gpu_reference`: files of another machine's run whose GPU rows stand in for the GPU side of
    a run that has none. GPU rows are taken only from the reference and CPU rows only from the
    run, so no number is attributed to the wrong machine; a run with GPU rows of its own is
    reported as it is, with a warning that the reference was not used.
    """
    records: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    machines: list[dict[str, Any]] = []
    notes: list[tuple[str | None, Said]] = []
    file_contexts: dict[str, dict[str, Any]] = {}
    for index, group in enumerate(_machine_groups(paths)):
        context = group[0].context
        cpu, files = str(context.get("cpu_model", "unknown CPU")), [r.path for r in group]
        machines.append(dict(cpu=cpu, gpu=_gpu_name(context), files=files, context=context))
        machines[-1].update(gpu_context=context, gpu_reference=False)
        measured = {report.path: _measured(report) for report in group}
        for report in group:
            file_contexts[report.path] = _plain_values(report.context)
            found = _problems(report)
            problems += found
            notes += _file_notes(report, found, invalid_rows(report))
            records += [_record(r, index, report.path, THIS_RUN) for r in measured[report.path]]
        notes += _shared_note(measured)
    if gpu_reference:
        notes += _add_reference(records, problems, machines, gpu_reference, file_contexts)
    _tag_twins(machines)
    rows = pd.DataFrame.from_records(records)
    if rows.empty:
        rows = pd.DataFrame(columns=["machine", "name", "backend", "workload", "real_time_s"])
    # Each row carries the context of the file it came from (a reference row, its GPU's).
    contexts = pd.DataFrame.from_dict(file_contexts, orient="index").add_prefix("context.")
    if not rows.empty and not contexts.empty:
        rows = rows.join(contexts, on="file")
    # Every counter the schema declares (or its family's) and every peak as floats, here and
    # nowhere after: a file writes the peaks as strings, an older one may write a counter so.
    typed = [c for c in rows.columns if counter(str(c)) or _NUMERIC_CONTEXT.match(str(c))]
    rows = rows.assign(**{str(c): num(rows, c) for c in typed})
    machine_frame = pd.DataFrame.from_records(machines)
    # The names as given, None where a machine has none: pandas 3 would make these columns its
    # string dtype, where a missing GPU reads as NaN (truthy, and not a string).
    for column in ("cpu", "gpu", "tag"):
        machine_frame[column] = pd.Series([m[column] for m in machines], dtype=object)
    problem_frame = pd.DataFrame.from_records(problems, columns=list(_PROBLEM_COLUMNS))
    return Table(rows, problem_frame, machine_frame, notes)


def _add_reference(
    records: list[dict[str, Any]],
    problems: list[dict[str, Any]],
    machines: list[dict[str, Any]],
    reference_paths: Sequence[str],
    file_contexts: dict[str, dict[str, Any]],
) -> list[tuple[str | None, Said]]:
    # The machines of the reference that have GPU rows: one must, and only one.
    with_gpu = [g for g in _machine_groups(reference_paths) if any(map(_gpu_rows, g))]
    joined = ", ".join(reference_paths)
    if not with_gpu:
        raise BenchJsonError(joined, "--gpu-reference needs a run with GPU rows; this one has none")
    if len(with_gpu) > 1:
        names = ", ".join(str(_gpu_name(g[0].context)) for g in with_gpu)
        raise BenchJsonError(
            joined,
            f"--gpu-reference files come from {len(with_gpu)} GPU machines ({names}); give the "
            f"files of one",
        )
    own = sorted({r["file"] for r in records if r["backend"] == "gpu"})
    if own:
        names = [Path(p).name for p in reference_paths]
        return [(None, said("reference_not_used", names=names, own=own))]
    if len(machines) > 1:
        raise BenchJsonError(
            ", ".join(p for m in machines for p in m["files"]),
            f"--gpu-reference pairs the reference GPU with one machine's CPU; these files come "
            f"from {len(machines)} machines",
        )
    group = with_gpu[0]
    context = group[0].context
    run = machines[0]
    commit = _ctx_str(context, "gpubench_git_commit")
    run.update(gpu=_gpu_name(context), gpu_context=context, gpu_reference=True)
    # The reference run's files, its day and commit where its context records them, and whether
    # it ran on this run's host.
    date = (_ctx_str(context, "date") or "").split("T", 1)[0] or None
    run.update(gpu_files=[r.path for r in group], gpu_date=date)
    run.update(gpu_commit=None if commit == "unknown" else commit)
    run.update(gpu_same_host=_same_host(context, run["context"]))
    notes: list[tuple[str | None, Said]] = []
    for report in group:
        file_contexts[report.path] = _plain_values(report.context)
        records += [_record(r, 0, report.path, REFERENCE_RUN) for r in _gpu_rows(report)]
        found = [p for p in _problems(report) if p["backend"] == "gpu" and p["status"] != INVALID]
        problems += found
        # A reference that did not finish says so, as the run's own files do: its GPU rows are
        # only the benchmarks it got to (its invalid rows go unmentioned).
        notes += _file_notes(report, found, [], "the GPU reference run")
    return notes


def _gpu_rows(report: BenchReport) -> list[BenchRow]:
    """The measured GPU rows of a file (_measured), which a GPU reference lends."""
    return [r for r in _measured(report) if _classified(r)["backend"] == "gpu"]


def _plain_values(context: dict[str, Any]) -> dict[str, Any]:
    """The values of a context a table cell holds: strings and numbers (not the caches' lists)."""
    return {k: v for k, v in context.items() if isinstance(v, (str, int, float))}


def _tag_twins(machines: list[dict[str, Any]]) -> None:
    """Two machines with the same device names would get the same legend entry: tell them
    apart by host name where every such machine records a different one, else by file."""
    named: dict[tuple[str | None, str], list[dict[str, Any]]] = {}
    for machine in machines:
        machine["tag"] = None
        named.setdefault((machine["gpu"], machine["cpu"]), []).append(machine)
    for twins in (group for group in named.values() if len(group) > 1):
        hosts = [_ctx_str(m["context"], "host_name") for m in twins]
        by_host = None not in hosts and len(set(hosts)) == len(hosts)
        for machine, host in zip(twins, hosts):
            machine["tag"] = str(host) if by_host else Path(machine["files"][0]).stem


def undisturbed(rows: pd.DataFrame) -> pd.DataFrame:
    """The repetitions of `rows` (any frame with a `conditions` column: file_rows, load_table's
    rows) that the harness's rule did not call disturbed: quiet ones and those whose conditions
    are unknown (an older file's repetitions are used as measured). The one filter a judgement
    applies (compare leaves disturbed repetitions out and counts them)."""
    return rows[rows["conditions"] != DISTURBED]


def headline_rows(rows: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """The repetitions each benchmark's number comes from (policy.HEADLINE_RULE): per group of
    `keys`, its undisturbed repetitions where at least MIN_UNDISTURBED remain or none was
    disturbed, else all of them. Adds `disturbed_in_number` (True on every repetition of a group
    whose number includes disturbed ones, to be marked) and `disturbed_left_out` (how many
    disturbed repetitions of the group were left out)."""
    if rows.empty or "conditions" not in rows:
        return rows.assign(disturbed_in_number=False, disturbed_left_out=0)
    disturbed = rows["conditions"] == DISTURBED
    grouped = disturbed.groupby([rows[k] for k in keys], sort=False, dropna=False)
    n_disturbed = grouped.transform("sum")
    n_quiet = grouped.transform("size") - n_disturbed
    enough = (n_disturbed == 0) | (n_quiet >= MIN_UNDISTURBED)
    kept = rows[~(disturbed & enough)].copy()
    kept["disturbed_in_number"] = ~enough[kept.index]
    kept["disturbed_left_out"] = n_disturbed[kept.index].where(enough[kept.index], 0).astype(int)
    return kept


def summarize(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per benchmark (machine, name, label): the median of the time and of every numeric
    column over the repetitions, with the spread that goes with it. The repetitions are those of
    the headline rule (headline_rows: undisturbed ones where at least MIN_UNDISTURBED remain,
    else all).

    Added columns: `time_s` (median real time), `time_min_s`, `time_max_s` (and `t_step_min`,
    `t_step_max` where training rows give `t_step`, the time per step), `repetitions` (those
    used), and `spread` ((max - min) / median of the time: the relative width of the band a chart
    draws); `conditions`: disturbed where the median includes disturbed repetitions (too few
    undisturbed ones: mark it), conditions unknown where a repetition used has no condition
    counters, else quiet; `disturbed_left_out`: the disturbed repetitions not used.
    String columns keep their first value.
    """
    if rows.empty:
        return rows.assign(
            time_s=[], time_min_s=[], time_max_s=[], repetitions=[], spread=[], conditions=[]
        )
    keys = ["machine", "name", "label"]
    rows = headline_rows(rows, keys)
    grouped = rows.groupby(keys, sort=False, dropna=False)
    flags = ("conditions", "disturbed_in_number")
    columns = [c for c in rows.columns if c not in keys and c not in flags]
    is_numeric = pd.api.types.is_numeric_dtype
    numeric = [c for c in columns if c != "disturbed_left_out" and is_numeric(rows[c])]
    other = [c for c in columns if c not in numeric]
    out = grouped[numeric].median()
    out[other] = grouped[other].first()
    time = grouped["real_time_s"]
    out["time_s"] = out["real_time_s"]
    out[["time_min_s", "time_max_s"]] = time.agg(["min", "max"])
    if "t_step" in rows:
        out[["t_step_min", "t_step_max"]] = grouped["t_step"].agg(["min", "max"])
    out["repetitions"] = time.size()
    out["spread"] = (out["time_max_s"] - out["time_min_s"]) / out["time_s"]
    out["conditions"] = grouped["conditions"].agg(
        lambda c: (
            DISTURBED if (c == DISTURBED).any() else UNKNOWN if (c == UNKNOWN).any() else QUIET
        )
    )
    out["disturbed_left_out"] = grouped["disturbed_left_out"].first().astype(int)
    return out.reset_index()


def gpu_benchmark_count(paths: Sequence[str]) -> int:
    """The number of GPU benchmarks (successful, by the rows' classification) in the files."""
    rows = load_table(paths).rows
    return int(rows.loc[rows["backend"] == "gpu", "name"].nunique()) if not rows.empty else 0
