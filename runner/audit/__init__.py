"""Token audits of LLM traffic logs: PCER, SPOR, KV-cache footprint and leakage, prompt bloat, dollars.

    pipeline.py   the audit's plan: its steps in the order they run, and each stage's parameters (dataclasses)
    steps.py      the kinds of step (a file of sql/, an inline statement, a Python step) and the runner
    explain.py    `kvreport audit --explain`: the steps an audit would run, and why
    engine.py     one audit: the pipeline's phases on one connection; scratch state in the temp catalog, the
                  figures written once into the DB's tables in one transaction (a failed audit writes nothing)
    ingest.py     one file into the audit's staged rows (DuckDB does the per-record work, in SQL), with retries
    formats.py    which format a file is (detection), the API-object shapes, --session-key / --time-key
    logfiles.py   the command line's paths, and a file's bytes (gzip / zstd decompressed and checked)
    linescan.py   passes over a file's lines: the scan (longest, too long, count) and line-keeping copies
    prepare.py    sessions CSV records and Parquet checks, before their SQL readers
    fastread.py   the fast readers of clean JSON-lines files (one typed parse per line), lines read again exactly
    kv_pricing.py KV bytes of a session at its own length (model_facts curve: caps, constant states; measured slope)
    dollars.py    the bill: rates looked up once per model (genai-prices, --prices), priced per call in SQL
    prices_file.py  the --prices file read and checked into a PriceBook
    prompt_bloat.py  the Python steps of the prompt-bloat analysis (tokenizer, slices)
    distributed.py   the Ray driver; ray_tasks.py its tasks (docs/audit-on-ray.md); remote.py: s3:// logs
    tokenizer.py  local Hugging Face tokenizers for --tokenizer (never downloads)
    demo.py       the built-in demo workload `kvreport run` audits
    sqlfiles.py   runs the .sql files of sql/ with the parameters each statement names (runner/core/sqltext.py)
    sql/          every query the audit runs, by stage: setup/ (settings, macros, scratch tables), ingest/ (one
                  reader per format), metrics/ (per session and audit-wide), bloat/, cost/, store/ (the calls,
                  labels, rejects), kv/ (what the DB measured); the site's queries are analysis/queries/audit_*.sql
    (tables)      the audit tables are part of the schema: runner/core/schema/*.sql
"""
