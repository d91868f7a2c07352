-- OpenAI envelopes, one JSON object per line:
--   {"session_id"?, "timestamp"?, "disconnected_at"?, "system_tokens"?, "request"?: <request body>,
--    "response": <Chat Completions or Responses API response>}
-- OpenAI counts cached tokens INSIDE the prompt: usage.prompt_tokens (Chat) / usage.input_tokens (Responses)
-- is the whole input and prompt_tokens_details.cached_tokens / input_tokens_details.cached_tokens is the
-- part of it served from the cache. So input_tokens = prompt_tokens, cached = cached_tokens, no sums.
-- A line with Anthropic-style usage (cache_read_input_tokens, where input_tokens EXCLUDES the cache) is
-- rejected rather than misread: mixing the two conventions is how PCERs above 100% happen.
-- One JSON parse per line (kv_parse with kv_openai_record, ingest/openai_record.sql); only rare cases (rejects,
-- a missing session or time) look at the raw line again. The checks and the output are ingest/openai_calls.sql.
INSERT INTO _staged BY NAME
WITH rec AS (SELECT * FROM kv_line_records($path, $delim, $max_line_size, $compression)),
p AS (
  SELECT line, raw, blank, CASE WHEN NOT blank THEN kv_parse(raw, kv_openai_record()) END AS j
  FROM rec
),
{include:ingest/openai_calls};
