"""Pieces every report section uses: dropping charts that had no data, and the note for a section
whose numbers come from two machines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..dataset import Source, short_cpu_name, short_gpu_name

if TYPE_CHECKING:  # only the type: importing charts_common would load matplotlib
    from .charts_common import ChartFile

__all__ = ["keep_charts", "mixed_note"]


def keep_charts(*charts: ChartFile | None) -> list[ChartFile]:
    """The charts that were drawn (a chart function returns None when it has no data)."""
    return [c for c in charts if c is not None]


def mixed_note(sources: list[Source], what: str) -> list[str]:
    """A note for a section whose numbers come from two machines (or only from the reference):
    `what` with {cpu}, {gpu} and {elsewhere} filled in; empty for a single machine."""
    src = next((s for s in sources if s.mixes_machines), None)
    if src is None:
        return []
    return [
        what.format(
            cpu=short_cpu_name(src.cpu_name),
            gpu=short_gpu_name(src.gpu_name or ""),
            elsewhere=src.gpu_reference.elsewhere if src.gpu_reference else "",
        )
    ]
