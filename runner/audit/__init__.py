"""Token audits of LLM traffic logs: PCER, SPOR, KV-cache footprint and leakage, prompt bloat.

    ingest.py     which format a file is, and reading it (DuckDB does the per-record work, in SQL)
    engine.py     one audit: ingest -> normalised calls -> metrics, in temporary tables, then one
                  transaction copies everything into the DB (so a failed audit writes nothing)
    pricing.py    KV bytes of a session at its own length (model_facts curve: caps, constant states; measured slope)
    tokenizer.py  local Hugging Face tokenizers for --tokenizer (never downloads)
    demo.py       the built-in demo workload `kvreport run` audits
    (tables)      the audit tables are part of the schema: runner/core/schema/*.sql
    sqlfiles.py   runs the .sql files of sql/ with bound parameters
    sql/          every query the audit runs (the site's queries are analysis/queries/audit_*.sql)
"""
