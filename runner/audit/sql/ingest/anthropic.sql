-- Anthropic Messages API envelopes, one JSON object per line (same envelope as the OpenAI log).
-- Anthropic's usage.input_tokens EXCLUDES cache reads and cache writes: the whole input is
--   input_tokens + cache_read_input_tokens + cache_creation_input_tokens
-- and the part served from the cache is cache_read_input_tokens. Reading input_tokens as the total
-- (the OpenAI habit) gives PCERs above 100%; forgetting the cache writes inflates PCER (0.995, not 0.499).
INSERT INTO _staged BY NAME
WITH rec AS (SELECT * FROM kv_line_records($path, $delim, $max_line_size, $compression)),
p AS (
  SELECT line, raw, blank, CASE WHEN NOT blank THEN kv_parse(raw, '{
    "session_id": "VARCHAR", "timestamp": "VARCHAR", "disconnected_at": "VARCHAR", "system_tokens": "VARCHAR",
    "request": {"model": "VARCHAR", "system": "JSON", "messages": "JSON", "metadata": {"user_id": "VARCHAR"}},
    "response": {"type": "VARCHAR", "model": "VARCHAR",
                 "usage": {"input_tokens": "VARCHAR", "output_tokens": "VARCHAR",
                           "cache_read_input_tokens": "VARCHAR", "cache_creation_input_tokens": "VARCHAR",
                           "prompt_tokens": "VARCHAR"}}}') END AS j
  FROM rec
),
f AS (
  SELECT *, CASE WHEN j IS NOT NULL OR blank THEN true ELSE json_valid(raw) END AS ok FROM p
),
g AS (
  SELECT line, raw, blank, ok,
         j.session_id AS s_session, j.timestamp AS s_ts, j.disconnected_at AS s_disc, j.system_tokens AS s_system,
         j.request.metadata.user_id AS s_user, j.request.model AS request_model, j.response.model AS response_model,
         j.response.type AS resp_type,
         j.response.usage.input_tokens AS s_input, j.response.usage.output_tokens AS s_output,
         j.response.usage.cache_read_input_tokens AS s_read, j.response.usage.cache_creation_input_tokens AS s_write,
         j.response.usage.prompt_tokens AS s_openai_prompt,
         kv_nn(j.request.system) AS j_system_prompt, kv_nn(j.request.messages) AS j_messages
  FROM f
),
v AS (
  SELECT *,
         kv_sint_error(s_input, 'usage.input_tokens') AS e_input,
         kv_sint_error(s_read, 'usage.cache_read_input_tokens') AS e_read,
         kv_sint_error(s_write, 'usage.cache_creation_input_tokens') AS e_write,
         kv_sint_error(s_output, 'usage.output_tokens') AS e_output,
         kv_sint_error(s_system, 'system_tokens') AS e_system,
         kv_sint(s_input) + coalesce(kv_sint(s_read), 0) + coalesce(kv_sint(s_write), 0) AS n_total,
         coalesce(kv_sint(s_read), 0) AS n_read, coalesce(kv_sint(s_write), 0) AS n_write,
         kv_sint(s_output) AS n_output, kv_sint(s_system) AS n_system, kv_sts(s_ts) AS t_ts, kv_sts(s_disc) AS t_disc
  FROM g
),
r AS (
  SELECT *,
    CASE
      WHEN blank THEN NULL
      WHEN NOT ok THEN 'malformed JSON'
      WHEN resp_type = 'error' THEN 'error response, no usage'
      WHEN s_openai_prompt IS NOT NULL
        THEN 'OpenAI-style usage (prompt_tokens includes the cache) in an Anthropic log: use --format openai'
      WHEN s_input IS NULL AND s_output IS NULL THEN
        CASE WHEN json_extract(raw, '$.response') IS NULL THEN 'no "response" object (not an Anthropic log envelope)'
             WHEN json_extract(raw, '$.response.error') IS NOT NULL THEN 'error response, no usage'
             WHEN json_extract(raw, '$.response.usage') IS NULL THEN 'response has no usage'
             ELSE 'usage has no token counts' END
      WHEN s_input IS NULL THEN 'usage.input_tokens missing'
      WHEN s_output IS NULL THEN 'usage.output_tokens missing'
      ELSE coalesce(e_input, e_read, e_write, e_output, e_system,
        CASE WHEN s_ts IS NOT NULL AND t_ts IS NULL THEN kv_sts_error(s_ts, 'timestamp') END,
        CASE WHEN s_disc IS NOT NULL AND t_disc IS NULL THEN kv_sts_error(s_disc, 'disconnected_at') END,
        CASE WHEN coalesce(n_system, 0) > n_total
             THEN format('system_tokens ({}) > total input ({})', n_system, n_total) END)
    END AS reason
  FROM v
),
k AS (  -- blank lines have no reason either, and their raw text is not JSON: never look into it
  SELECT *, reason IS NULL AND NOT blank AS keep FROM r
)
SELECT $source AS source, line, blank, 'anthropic' AS format, reason,
       CASE WHEN keep THEN coalesce(s_session, s_user) END AS session_id,  -- none: named after the line later
       CASE WHEN keep THEN t_ts END AS start_time,
       NULL AS end_time,
       CASE WHEN keep THEN t_disc END AS disconnected_at,
       'anthropic' AS provider_name, request_model, response_model,
       CASE WHEN keep THEN n_total END AS input_tokens,
       CASE WHEN keep THEN n_read END AS cached_input_tokens,
       CASE WHEN keep THEN n_write END AS cache_creation_input_tokens,
       CASE WHEN keep THEN n_output END AS output_tokens,
       CASE WHEN keep THEN n_system END AS system_tokens,
       CASE WHEN keep AND s_system IS NOT NULL THEN 'explicit' END AS system_tokens_source,
       CASE WHEN keep AND coalesce(j_system_prompt, j_messages) IS NOT NULL
            THEN json_object('system', j_system_prompt, 'messages', j_messages) END AS content
FROM k;
