"""Benchmark history: bench runs kept over time in one SQLite file, trend charts, and a regression
check against the recent runs of the same machine.

Modules: `store` (the database), `ingest` (bench JSON -> a stored run), `check` (the regression
rule), `chart` (trend charts and the HTML index, from
`templates/index.html.j2`), `cli` (the `gpubench-history` command).
"""
