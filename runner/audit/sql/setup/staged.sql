-- Every record read, valid or not, before it is split into token_calls and token_rejects. One row per
-- call: `reason` NULL means valid; `blank` marks an empty line (kept only so rows keep line positions). `content` keeps the logged messages (system + turns) only while the
-- audit runs, for the prompt-bloat analysis; it is never stored in the DB.
CREATE OR REPLACE TEMP TABLE _staged (
  source VARCHAR, line BIGINT, blank BOOLEAN DEFAULT false, format VARCHAR, reason VARCHAR, session_id VARCHAR,
  start_time TIMESTAMP, end_time TIMESTAMP, disconnected_at TIMESTAMP,
  provider_name VARCHAR, request_model VARCHAR, response_model VARCHAR,
  input_tokens BIGINT, cached_input_tokens BIGINT, cache_creation_input_tokens BIGINT, output_tokens BIGINT,
  system_tokens BIGINT, system_tokens_source VARCHAR,
  content JSON,
  need_raw BOOLEAN DEFAULT false  -- the fast reader's rows to read again line-exactly (ingest/openai_calls.sql)
);
