-- The history database's tables (store.py). Statements are split at the semicolons, so no
-- comment holds one.
CREATE TABLE machines (
    id INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL  -- JSON object: the context fields the fingerprint is made of
);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    machine_id INTEGER NOT NULL REFERENCES machines (id),
    git_commit TEXT NOT NULL,
    date TEXT NOT NULL,           -- as bench wrote it: ISO 8601 with a UTC offset
    time_utc_s REAL NOT NULL,     -- the same instant in seconds since the epoch: orders the runs
    source_path TEXT NOT NULL,
    source_sha256 TEXT NOT NULL,
    context TEXT NOT NULL,        -- the whole JSON context of the file
    added_utc TEXT NOT NULL,
    interrupted TEXT,             -- NULL: a whole run, else "interrupted by SIGTERM after 3 of 4 ..."
    UNIQUE (machine_id, git_commit, date)
);
CREATE INDEX runs_by_machine ON runs (machine_id, time_utc_s);
CREATE TABLE benchmarks (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,    -- Google Benchmark's run_name
    family TEXT NOT NULL,
    manual_time INTEGER NOT NULL, -- 1: real_time is the CUDA-event time of a GPU benchmark
    threads REAL                  -- BLAS thread count of a CPU benchmark, NULL when not known
);
CREATE TABLE samples (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    benchmark_id INTEGER NOT NULL REFERENCES benchmarks (id),
    repetition INTEGER NOT NULL,
    real_time_s REAL NOT NULL,    -- per iteration, seconds
    cpu_time_s REAL,              -- per iteration, seconds, NULL when the file had none
    iterations INTEGER NOT NULL,
    disturbed INTEGER,            -- 1 measured while disturbed, 0 quiet, NULL conditions unknown
    PRIMARY KEY (run_id, benchmark_id, repetition)
) WITHOUT ROWID;
CREATE TABLE failures (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    benchmark_id INTEGER NOT NULL REFERENCES benchmarks (id),
    repetition INTEGER,
    reason TEXT NOT NULL
);
