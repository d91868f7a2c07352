-- Langfuse observation exports, one observation per line, as the public API returns them
-- (GET /api/public/observations, one element of `data` per line) and the UI exports them:
--   {"id", "traceId", "type": "GENERATION" | "SPAN" | "EVENT" | ..., "name", "startTime", "endTime", "model",
--    "level", "statusMessage", "input", "output", "usageDetails": {"input": 1200, "input_cached_tokens": 1024,
--    "output": 80, "total": 2304, ...}}
-- Documentation followed:
--   * langfuse.com/docs/observability/features/token-and-cost-tracking: usage types are arbitrary keys; "Langfuse
--     summarizes all usage types that include the string input as input usage types, similarly output", and
--     "if no total usage type is ingested, Langfuse sums up all usage type units to a total". So the usage
--     types are DISJOINT parts: `input` holds only the tokens no other input key holds.
--   * Langfuse's OpenAI integration (langfuse-python, usage parsing) writes prompt_tokens_details.cached_tokens
--     as `input_cached_tokens` and SUBTRACTS it from `input` (input = prompt_tokens - cached_tokens), and the
--     Anthropic conventions arrive as `cache_read_input_tokens` / `cache_creation_input_tokens` beside an
--     `input` that excludes them. Hence: whole input = the sum of every key containing "input"; cached = the
--     input keys naming a cache read ("cached", "cache_read"); cache writes = those naming "cache_creation" or
--     "cache_write"; output = the sum of the keys containing "output". `total` is not read (it may hold both).
--   * Usage is tracked on observations of type GENERATION. Other observations (spans, events, tools, ...) are
--     not calls: skipped like the non-GenAI spans of an OpenTelemetry export, neither calls nor rejects.
--     A generation at level ERROR is a reject with its statusMessage.
--   * Observations carry traceId; a session belongs to the trace. The default session keys are sessionId
--     (present when the export joined it in) then traceId: give --session-key for your own field.
CREATE OR REPLACE TEMP TABLE _shape AS
WITH p AS (
  SELECT * FROM kv_shape_lines($session_keys, $time_keys, '{"type": "VARCHAR",
    "model": "VARCHAR", "level": "VARCHAR", "statusMessage": "VARCHAR", "endTime": "VARCHAR",
    "usageDetails": "JSON", "input": "JSON"}', false)
),
d AS (  -- one row per usage type of each generation
  SELECT p.line, e.key, json_extract_string(e.value, '$') AS val,
         CASE WHEN NOT contains(e.key, 'input') THEN CASE WHEN contains(e.key, 'output') THEN 'output' END
              WHEN contains(e.key, 'cached') OR contains(e.key, 'cache_read') THEN 'cached'
              WHEN contains(e.key, 'cache_creation') OR contains(e.key, 'cache_write') THEN 'write'
              ELSE 'input' END AS kind
  FROM p, json_each(p.x.usageDetails) e
  WHERE json_type(p.x.usageDetails) = 'OBJECT' AND upper(p.x.type) = 'GENERATION'
),
s AS (
  SELECT line,
         CAST(sum(kv_sint(val)) FILTER (WHERE kind = 'input') AS VARCHAR) AS s_input,
         CAST(sum(kv_sint(val)) FILTER (WHERE kind = 'cached') AS VARCHAR) AS s_cached,
         CAST(sum(kv_sint(val)) FILTER (WHERE kind = 'write') AS VARCHAR) AS s_write,
         CAST(sum(kv_sint(val)) FILTER (WHERE kind = 'output') AS VARCHAR) AS s_output,
         min(kv_sint_error(val, 'usageDetails.' || key)) FILTER (WHERE kind IS NOT NULL) AS usage_error
  FROM d GROUP BY line
)
SELECT p.line, blank, ok, coalesce(ok AND upper(x.type) <> 'GENERATION', false) AS skip,
  CASE
    WHEN x IS NULL THEN 'not a JSON object'
    WHEN x.type IS NULL THEN 'not a Langfuse observation (no type)'
    WHEN upper(x.level) = 'ERROR' THEN 'level ERROR: ' || coalesce(left(x.statusMessage, 200), '(no statusMessage)')
    WHEN json_type(x.usageDetails) IS DISTINCT FROM 'OBJECT' THEN 'generation has no usageDetails'
    ELSE usage_error
  END AS shape_reason,
  false AS includes_cache,
  s_input, 'usageDetails.input' AS f_input, s_cached, 'usageDetails cache-read keys' AS f_cached,
  s_write, 'usageDetails cache-write keys' AS f_write, s_output, 'usageDetails.output' AS f_output,
  key_session AS s_session, key_time AS s_start, x.endTime AS s_end,
  NULL AS provider_name, x.model AS request_model, NULL AS response_model,
  CASE WHEN json_type(x.input) = 'ARRAY' THEN json_object('system', NULL, 'messages', x.input) END AS content
FROM p LEFT JOIN s USING (line);
