-- The audit's calls, read back from the DB's tables once they are stored (engine.run_audit: store/call_rows_*.sql
-- ran inside the audit's transaction): _calls keeps its columns and rows, now over token_call_rows and its
-- labels, and _staged is dropped. DuckDB frees a table dropped inside a transaction only when it commits, but
-- nothing reads _staged again: its blocks leave memory once (written to the scratch folder) instead of being
-- read back and written out again by every pass over the calls, and the stored row groups, compressed and
-- already on disk, are dropped from memory without being written.
-- The join's build side is this audit's few labels: DuckDB filters the row scan by their audit_id.
CREATE OR REPLACE TEMP TABLE _audit_labels AS
SELECT * FROM token_call_labels WHERE audit_id = $audit_id;

CREATE OR REPLACE TEMP VIEW _calls AS
SELECT l.source, r.line, l.format, r.session_id, r.start_time, r.end_time, r.disconnected_at, l.provider_name,
       l.request_model, l.response_model, r.input_tokens, r.cached_input_tokens, r.cache_creation_input_tokens,
       r.output_tokens, r.system_tokens, l.system_tokens_source
FROM token_call_rows r JOIN _audit_labels l ON r.audit_id = l.audit_id AND r.label_id = l.label_id;

DROP VIEW _rejects;
DROP TABLE _staged;
