-- The seed's per-session records, before validation: one row per record, every field as JSON so the
-- JSONL, CSV and Parquet readers share one set of checks (ingest/sessions_format.sql).
CREATE OR REPLACE TEMP TABLE _sess_raw (
  line BIGINT, blank BOOLEAN DEFAULT false, ok BOOLEAN, note VARCHAR, session_id JSON, system_tokens JSON, user_tokens JSON,
  assistant_tokens JSON, cached_input_tokens JSON, first_seen JSON, last_activity JSON,
  disconnected_at JSON, model JSON
);
-- A CSV or Parquet cell as JSON: numbers stay numbers (so 12.5 is "not an integer", not a string), the
-- rest become strings, empty cells become NULL (missing). json_valid guards the cast: "007" looks like a
-- number but is not JSON, and a cast that raises would cost the whole file.
CREATE OR REPLACE TEMP MACRO kv_cell(x) AS
  CASE WHEN x IS NULL OR trim(x) = '' THEN NULL
       WHEN kv_is_number(trim(x)) AND json_valid(trim(x)) THEN CAST(trim(x) AS JSON)
       ELSE to_json(x) END;
