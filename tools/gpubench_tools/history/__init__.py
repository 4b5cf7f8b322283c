"""Benchmark history: bench runs kept over time in one SQLite file, trend charts, and a regression
check against the recent runs of the same machine.

Modules, each importing only those before it: `store` (the database, as data), `check` (the
regression rule), `words` (what the check and `add` say: templates/words.j2), `ingest` (bench
JSON -> a stored run), `chart` (trend charts and the HTML index, from `templates/index.html.j2`),
`cli` (the `gpubench-history` command).
"""
