"""The gate's instruction lane: instructions of each timed loop, counted under Valgrind's callgrind,
base against contender.

- ``dumps``: callgrind's dump files to one table (a row per dumped region);
- ``counts``: that table to instructions per iteration per benchmark (single-threaded rows only);
- ``judge``: base against contender, a verdict per benchmark and one for the lane;
- ``lane``: runs both bench executables under callgrind and judges them
  (``python -m gpubench_tools.instructions``);
- ``combine``: the lane's verdict with the timing lane's, the gate's one exit status.
"""
