-- OpenTelemetry trace exports (OTLP/JSON) with GenAI semantic-convention attributes. Every span that
-- carries a gen_ai.* attribute is one call; other spans (HTTP, DB, ...) are not calls and are skipped.
--   gen_ai.usage.input_tokens               all input tokens, cached ones INCLUDED (as OpenAI counts)
--   gen_ai.usage.cache_read.input_tokens    the cached part
--   gen_ai.usage.cache_creation.input_tokens tokens written to the cache
--   gen_ai.usage.output_tokens, gen_ai.conversation.id (else the trace id), span start/end times.
-- OTLP/JSON writes 64-bit integers as strings ("intValue": "123"); both forms are accepted.
-- A rejected span is reported at its export's line, with the span's position and id in the reason.
INSERT INTO _staged BY NAME
WITH rec AS (
  SELECT line, raw, json_valid(raw) AS ok FROM kv_lines()
  WHERE NOT kv_blank(raw)
),
docs AS (
  SELECT line, ok, CASE WHEN ok THEN json_extract(raw, '$.resourceSpans[*].scopeSpans[*].spans[*]') END AS sp,
         CASE WHEN ok THEN json_extract(raw, '$.resourceSpans') END AS rs
  FROM rec
),
bad_lines AS (
  SELECT line, CASE WHEN NOT ok THEN 'malformed JSON'
                    ELSE 'not an OTLP trace export (no resourceSpans)' END AS reason
  FROM docs WHERE NOT ok OR rs IS NULL
),
spans AS (
  SELECT line, unnest(sp) AS span, generate_subscripts(sp, 1) AS span_index FROM docs WHERE ok AND rs IS NOT NULL
),
attrs AS (
  SELECT line, span_index, unnest(json_extract(span, '$.attributes[*]')) AS a FROM spans
),
kv AS (
  SELECT line, span_index, json_extract_string(a, '$.key') AS k,
         kv_nn(coalesce(json_extract(a, '$.value.intValue'), json_extract(a, '$.value.doubleValue'),
                        json_extract(a, '$.value.stringValue'), json_extract(a, '$.value.boolValue'))) AS val
  FROM attrs
),
piv AS (
  SELECT line, span_index,
    bool_or(starts_with(k, 'gen_ai.')) AS is_genai,
    any_value(val) FILTER (WHERE k = 'gen_ai.usage.input_tokens') AS j_input,
    any_value(val) FILTER (WHERE k = 'gen_ai.usage.output_tokens') AS j_output,
    any_value(val) FILTER (WHERE k = 'gen_ai.usage.cache_read.input_tokens') AS j_cache_read,
    any_value(val) FILTER (WHERE k = 'gen_ai.usage.cache_creation.input_tokens') AS j_cache_write,
    any_value(val) FILTER (WHERE k = 'gen_ai.conversation.id') AS j_conversation,
    any_value(val) FILTER (WHERE k IN ('gen_ai.provider.name', 'gen_ai.system')) AS j_provider,
    any_value(val) FILTER (WHERE k = 'gen_ai.request.model') AS j_req_model,
    any_value(val) FILTER (WHERE k = 'gen_ai.response.model') AS j_resp_model,
    any_value(val) FILTER (WHERE k = 'gen_ai.system_instructions') AS j_system_text,
    any_value(val) FILTER (WHERE k = 'gen_ai.input.messages') AS j_messages
  FROM kv GROUP BY line, span_index
),
s AS (
  SELECT sp.line, sp.span_index, json_extract_string(sp.span, '$.spanId') AS span_id,
         json_extract_string(sp.span, '$.traceId') AS trace_id,
         kv_nn(json_extract(sp.span, '$.startTimeUnixNano')) AS j_start,
         kv_nn(json_extract(sp.span, '$.endTimeUnixNano')) AS j_end, p.*
  FROM spans sp JOIN piv p USING (line, span_index)
  WHERE p.is_genai
),
r AS (
  SELECT *,
    format('span {} ({}): ', span_index, coalesce(span_id, 'no spanId')) || CASE
      WHEN j_input IS NULL THEN 'gen_ai.usage.input_tokens missing'
      WHEN j_output IS NULL THEN 'gen_ai.usage.output_tokens missing'
      ELSE coalesce(
        kv_int_error(j_input, 'gen_ai.usage.input_tokens', true),
        kv_int_error(j_output, 'gen_ai.usage.output_tokens', true),
        kv_int_error(j_cache_read, 'gen_ai.usage.cache_read.input_tokens', true),
        kv_int_error(j_cache_write, 'gen_ai.usage.cache_creation.input_tokens', true),
        kv_ts_error(j_start, 'startTimeUnixNano'),
        kv_ts_error(j_end, 'endTimeUnixNano'),
        CASE WHEN coalesce(kv_int(j_cache_read), 0) > kv_int(j_input)
             THEN format('gen_ai.usage.cache_read.input_tokens ({}) > gen_ai.usage.input_tokens ({})',
                         kv_int(j_cache_read), kv_int(j_input)) END)
    END AS reason
  FROM s
),
-- Message content travels as JSON text inside string attributes.
parsed AS (
  SELECT *,
    CASE WHEN json_type(j_system_text) = 'VARCHAR' AND json_valid(json_extract_string(j_system_text, '$'))
         THEN CAST(json_extract_string(j_system_text, '$') AS JSON) ELSE j_system_text END AS sys_json,
    CASE WHEN json_type(j_messages) = 'VARCHAR' AND json_valid(json_extract_string(j_messages, '$'))
         THEN CAST(json_extract_string(j_messages, '$') AS JSON) ELSE j_messages END AS msg_json
  FROM r
)
SELECT $source AS source, line, 'otel' AS format, reason, NULL AS session_id, NULL AS start_time,
       NULL AS end_time, NULL AS disconnected_at, NULL AS provider_name, NULL AS request_model,
       NULL AS response_model, NULL AS input_tokens, NULL AS cached_input_tokens,
       NULL AS cache_creation_input_tokens, NULL AS output_tokens, NULL AS system_tokens,
       NULL AS system_tokens_source, NULL AS content
FROM bad_lines
UNION ALL
SELECT $source, line, 'otel', reason,
       coalesce(json_extract_string(j_conversation, '$'), 'trace:' || trace_id,
                kv_no_session($source_name, line || ':' || span_index)),
       kv_ts(j_start), kv_ts(j_end), NULL,
       json_extract_string(j_provider, '$'), json_extract_string(j_req_model, '$'),
       json_extract_string(j_resp_model, '$'),
       kv_int(j_input), coalesce(kv_int(j_cache_read), 0), coalesce(kv_int(j_cache_write), 0), kv_int(j_output),
       NULL, NULL,
       CASE WHEN coalesce(sys_json, msg_json) IS NOT NULL
            THEN json_object('system', sys_json, 'messages', msg_json) END
FROM parsed;

-- Blank lines: skipped, but counted (as rows with blank = true, like the line readers keep them).
INSERT INTO _staged BY NAME
SELECT $source AS source, line, true AS blank, 'otel' AS format FROM kv_lines() WHERE kv_blank(raw);
