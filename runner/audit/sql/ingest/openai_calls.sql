-- The calls and rejects of OpenAI envelope lines, from p (line, raw, blank, j: the line parsed with
-- kv_openai_record): the checks, the provider's token convention and the output row. Not run alone: the
-- line-exact reader (ingest/openai.sql) and the fast one (ingest/openai_fast.sql) include it after their p.
-- need_raw: a row of the fast reader (which has no raw text) whose result depends on the raw line: it is
-- read again by the line-exact reader (ingest.py). The line-exact reader never sets it (raw is NULL there
-- only on blank lines).
f AS (  -- valid JSON that is not an object (e.g. the literal null) parses to NULL: ask json_valid for those only
  SELECT *, CASE WHEN j IS NOT NULL OR blank THEN true ELSE json_valid(raw) END AS ok FROM p
),
g AS (
  SELECT line, raw, blank, ok,
         j.session_id AS s_session, j.timestamp AS s_ts, j.disconnected_at AS s_disc, j.system_tokens AS s_system,
         j.request.user AS s_user, j.request.model AS request_model, j.response.model AS response_model,
         j.response.type AS resp_type,
         coalesce(j.response.usage.prompt_tokens, j.response.usage.input_tokens) AS s_input,
         coalesce(j.response.usage.prompt_tokens_details.cached_tokens,
                  j.response.usage.input_tokens_details.cached_tokens) AS s_cached,
         coalesce(j.response.usage.completion_tokens, j.response.usage.output_tokens) AS s_output,
         coalesce(j.response.usage.cache_read_input_tokens, j.response.usage.cache_creation_input_tokens) AS s_anthropic,
         kv_nn(j.request.messages) AS j_messages, kv_nn(j.request.instructions) AS j_instructions,
         kv_nn(j.request.input) AS j_input_items
  FROM f
),
c AS (  -- every value converted once: the checks below and the output share them
  SELECT *, kv_sint(s_input) AS n_input, kv_sint(s_cached) AS c_cached, kv_sint(s_output) AS n_output,
         kv_sint(s_system) AS n_system, kv_sts(s_ts) AS t_ts, kv_sts(s_disc) AS t_disc
  FROM g
),
v AS (  -- a value's reject reason only where it did not convert: kv_sint and kv_sint_error never both give
        -- NULL for a value (setup/macros.sql), so a converted one has none, and its text is not tested again
  SELECT * EXCLUDE (c_cached),
         CASE WHEN n_input IS NULL THEN kv_sint_error(s_input, 'usage.prompt_tokens') END AS e_input,
         CASE WHEN c_cached IS NULL THEN kv_sint_error(s_cached, 'usage.prompt_tokens_details.cached_tokens') END AS e_cached,
         CASE WHEN n_output IS NULL THEN kv_sint_error(s_output, 'usage.completion_tokens') END AS e_output,
         CASE WHEN n_system IS NULL THEN kv_sint_error(s_system, 'system_tokens') END AS e_system,
         coalesce(c_cached, 0) AS n_cached
  FROM c
),
r AS (
  SELECT *,
    CASE
      WHEN blank THEN NULL
      WHEN NOT ok THEN 'malformed JSON'
      WHEN s_input IS NULL AND s_output IS NULL THEN
        CASE WHEN json_extract(raw, '$.response') IS NULL THEN 'no "response" object (not an OpenAI log envelope)'
             WHEN json_extract(raw, '$.response.error') IS NOT NULL THEN 'error response, no usage'
             WHEN json_extract(raw, '$.response.usage') IS NULL THEN 'response has no usage'
             ELSE 'usage has no token counts' END
      WHEN s_anthropic IS NOT NULL OR resp_type = 'message'
        THEN 'Anthropic-style usage (input_tokens excludes cache reads) in an OpenAI log: use --format anthropic'
      WHEN s_input IS NULL THEN 'usage has neither prompt_tokens nor input_tokens'
      WHEN s_output IS NULL THEN 'usage has neither completion_tokens nor output_tokens (not a generation call?)'
      ELSE coalesce(e_input, e_cached, e_output, e_system,
        CASE WHEN s_ts IS NOT NULL AND t_ts IS NULL THEN kv_sts_error(s_ts, 'timestamp') END,
        CASE WHEN s_disc IS NOT NULL AND t_disc IS NULL THEN kv_sts_error(s_disc, 'disconnected_at') END,
        CASE WHEN n_cached > n_input THEN format('cached_tokens ({}) > prompt_tokens ({})', n_cached, n_input) END,
        CASE WHEN coalesce(n_system, 0) > n_input THEN format('system_tokens ({}) > prompt_tokens ({})', n_system, n_input) END)
    END AS reason
  FROM v
),
k AS (  -- blank lines have no reason either, and their raw text is not JSON: never look into it
  SELECT *, reason IS NULL AND NOT blank AS keep FROM r
)
SELECT $source AS source, line, blank, 'openai' AS format, reason,
       CASE WHEN keep THEN coalesce(s_session, s_user,
         json_extract_string(raw, '$.request.metadata.session_id'),
         json_extract_string(raw, '$.request.metadata.conversation_id')) END AS session_id,  -- none: named after the line later
       CASE WHEN keep THEN coalesce(t_ts, kv_ts(json_extract(raw, '$.response.created')),
                                              kv_ts(json_extract(raw, '$.response.created_at'))) END AS start_time,
       NULL AS end_time,
       CASE WHEN keep THEN t_disc END AS disconnected_at,
       'openai' AS provider_name, request_model, response_model,
       CASE WHEN keep THEN n_input END AS input_tokens,
       CASE WHEN keep THEN n_cached END AS cached_input_tokens,
       CASE WHEN keep THEN 0 END AS cache_creation_input_tokens,
       CASE WHEN keep THEN n_output END AS output_tokens,
       CASE WHEN keep THEN n_system END AS system_tokens,
       CASE WHEN keep AND s_system IS NOT NULL THEN 'explicit' END AS system_tokens_source,
       CASE WHEN keep AND coalesce(j_messages, j_instructions, j_input_items) IS NOT NULL
            THEN json_object('system', j_instructions, 'messages', coalesce(j_messages, j_input_items)) END AS content,
       raw IS NULL AND NOT blank
         AND (ok IS NOT true OR (s_input IS NULL AND s_output IS NULL)
              OR (keep AND (coalesce(s_session, s_user) IS NULL OR t_ts IS NULL))) AS need_raw
FROM k
