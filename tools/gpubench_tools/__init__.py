"""gpubench tools: read the JSON that `bench` writes and turn it into reports and comparisons.

Shared by both tools: `benchjson` (the one reader of the file format, and the rule that tells a
skipped row from a failed one), `schema` (every counter's unit and direction, the label keys),
`dataset` (rows reduced to points and classified by their label), `overhead_model`, `crossover`
and `units`. The tools: `report` (gpubench-report) and `compare` (gpubench-compare).
"""

__version__ = "0.1.0"
