-- Schema version 4: token-audit ingest (issues 12, 15, 16).
-- n_skipped_lines: lines read that are neither a call nor a reject: blank and whitespace-only lines, and
-- records a log shape marks as not a call (e.g. a Langfuse span). With it every line is accounted for:
-- n_calls + n_rejects + n_skipped_lines = lines read (for the one-record-per-line formats).
ALTER TABLE audits ADD COLUMN n_skipped_lines BIGINT;
-- session_keys / time_keys: the --session-key and --time-key JSON paths the audit grouped and timed calls by
-- (" | " between keys, first non-null wins); NULL: each format's own fields. PCER per session depends on
-- what a session is, so two audits of one log with different keys stay told apart.
ALTER TABLE audits ADD COLUMN session_keys VARCHAR;
ALTER TABLE audits ADD COLUMN time_keys VARCHAR;
