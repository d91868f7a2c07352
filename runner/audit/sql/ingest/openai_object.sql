-- Bare OpenAI API objects, one per line, and OpenAI Batch API output lines. $root says where the object is:
--   openai-chat      ($root = '$') a Chat Completions object {"id", "object": "chat.completion", "created",
--                    "model", "choices", "usage": {"prompt_tokens", "completion_tokens",
--                    "prompt_tokens_details": {"cached_tokens"}}}
--   openai-response  ($root = '$') a Responses API object {"id", "object": "response", "created_at", "status",
--                    "model", "usage": {"input_tokens", "input_tokens_details": {"cached_tokens"}, "output_tokens"}}
--   openai-batch     ($root = '$.response.body') a Batch output line {"id", "custom_id", "response":
--                    {"status_code", "request_id", "body": <one of the objects above>}, "error": {"code", "message"}}
-- Documentation followed (OpenAI API reference, OpenAPI spec 2.3.0, and the prompt-caching guide
-- platform.openai.com/docs/guides/prompt-caching):
--   * prompt_tokens (Chat) / input_tokens (Responses) is the WHOLE input; cached_tokens ("tokens that were
--     retrieved from the cache") is the part of it served from the cache. So input = prompt_tokens and
--     cached = cached_tokens, never a sum. OpenAI reports no cache writes: cache_creation = 0. Keys other
--     providers or proxies add (cache_read_input_tokens, ...) are not part of OpenAI's object and are ignored.
--   * BatchRequestOutput, "the per-line object of the batch output and error files": `response` and `error`
--     are both nullable. A line whose `error` is set, whose response.status_code is not 200, or whose body is
--     an error, is a reject naming the code and message, never a silent drop.
--   * Responses API `status`: "failed" and "cancelled" responses are rejects; "incomplete" ones (cut at
--     max_output_tokens) were processed and count.
-- One row per line into _shape; sql/ingest/calls_from_usage.sql turns the texts into numbers and rejects.
-- Each line is parsed once into one structure that holds both an API object's fields and a batch line's
-- (kv_shape_lines): the object's fields are read from the top ($root = '$') or from response.body. Only a batch
-- line asks where its body is not an object (json_type, a third parse, rare).
-- Which shape's default keys (SHAPES in formats.py) the reader was given: 'chat', 'response', or NULL (a batch
-- line, or keys of the user's own: read by their paths).
CREATE OR REPLACE TEMP MACRO kv_openai_default_keys(root, session_keys, time_keys) AS
  CASE WHEN root <> '$' THEN NULL
       WHEN session_keys = ['$.metadata.session_id', '$.metadata.conversation_id'] AND time_keys = ['$.created']
         THEN 'chat'
       WHEN session_keys = ['$.conversation.id', '$.metadata.session_id', '$.metadata.conversation_id', '$.user']
            AND time_keys = ['$.created_at'] THEN 'response' END;

CREATE OR REPLACE TEMP TABLE _shape AS
WITH o AS (
  SELECT *, CASE WHEN $root = '$' THEN x ELSE x.response.body END AS obj
  FROM kv_shape_lines($session_keys, $time_keys, '{"object": "VARCHAR", "status": "VARCHAR", "model": "VARCHAR",
    "created": "VARCHAR", "created_at": "VARCHAR", "user": "VARCHAR", "conversation": {"id": "VARCHAR"},
    "metadata": {"session_id": "VARCHAR", "conversation_id": "VARCHAR"},
    "error": {"code": "VARCHAR", "message": "VARCHAR"},
    "usage": {"prompt_tokens": "VARCHAR", "input_tokens": "VARCHAR", "completion_tokens": "VARCHAR",
              "output_tokens": "VARCHAR", "prompt_tokens_details": {"cached_tokens": "VARCHAR"},
              "input_tokens_details": {"cached_tokens": "VARCHAR"}},
    "custom_id": "VARCHAR",
    "response": {"status_code": "VARCHAR", "body": {"object": "VARCHAR", "status": "VARCHAR", "model": "VARCHAR",
      "error": {"code": "VARCHAR", "message": "VARCHAR"},
      "usage": {"prompt_tokens": "VARCHAR", "input_tokens": "VARCHAR", "completion_tokens": "VARCHAR",
                "output_tokens": "VARCHAR", "prompt_tokens_details": {"cached_tokens": "VARCHAR"},
                "input_tokens_details": {"cached_tokens": "VARCHAR"}}}}}',
    kv_openai_default_keys($root, $session_keys, $time_keys) IS NOT NULL)
),
k AS (  -- the session and time: from the parse where the keys are the shape's defaults, else by their paths
  SELECT *, CASE kv_openai_default_keys($root, $session_keys, $time_keys)
              WHEN 'chat' THEN coalesce(x.metadata.session_id, x.metadata.conversation_id)
              WHEN 'response' THEN coalesce(x.conversation.id, x.metadata.session_id, x.metadata.conversation_id, x.user)
              ELSE key_session END AS s_session,
            CASE kv_openai_default_keys($root, $session_keys, $time_keys)
              WHEN 'chat' THEN x.created WHEN 'response' THEN x.created_at ELSE key_time END AS s_start
  FROM o
),
j AS (  -- b: the batch line (NULL for a bare object); x: the API object
  SELECT * EXCLUDE (x, obj), CASE WHEN $root <> '$' THEN x END AS b,
         {'object': obj.object, 'status': obj.status, 'model': obj.model, 'error': obj.error, 'usage': obj.usage} AS x
  FROM k
)
SELECT line, blank, ok, false AS skip,
  CASE
    WHEN NOT is_object THEN 'not a JSON object'
    WHEN $root <> '$' AND b.custom_id IS NULL THEN 'not an OpenAI Batch output line (no custom_id)'
    WHEN b.error.code IS NOT NULL OR b.error.message IS NOT NULL
      THEN 'batch error ' || coalesce(b.error.code, '') || ': ' || coalesce(b.error.message, '')
    WHEN $root <> '$' AND b.response.status_code IS DISTINCT FROM '200'
      THEN 'status_code ' || coalesce(b.response.status_code, 'missing') || ': '
           || coalesce(b.response.body.error.message, '(no message)')
    WHEN CASE WHEN $root = '$' THEN false  -- a CASE, not AND: only a batch line's body is looked at again
              ELSE json_type(json_extract(raw, $root)) IS DISTINCT FROM 'OBJECT' END THEN 'no response object'
    WHEN x.status IN ('failed', 'cancelled')
      THEN 'response ' || x.status || ': ' || coalesce(x.error.code || ': ', '')
           || coalesce(x.error.message, '(no message)')
    WHEN x.error.message IS NOT NULL THEN 'error response: ' || coalesce(x.error.code || ': ', '') || x.error.message
    WHEN x.object IS NOT NULL AND x.object NOT IN ('chat.completion', 'response')
      THEN format('object is "{}", not a chat.completion or response', x.object)
    WHEN x.usage IS NULL OR coalesce(x.usage.prompt_tokens, x.usage.input_tokens, x.usage.completion_tokens,
                                     x.usage.output_tokens) IS NULL THEN 'response has no usage'
  END AS shape_reason,
  true AS includes_cache,
  coalesce(x.usage.prompt_tokens, x.usage.input_tokens) AS s_input,
  -- the field a missing count is named by: the one this object's kind uses (Chat: prompt_/completion_tokens)
  CASE WHEN x.usage.prompt_tokens IS NOT NULL THEN 'usage.prompt_tokens'
       WHEN x.usage.input_tokens IS NOT NULL OR x.object = 'response' THEN 'usage.input_tokens'
       ELSE 'usage.prompt_tokens' END AS f_input,
  coalesce(x.usage.prompt_tokens_details.cached_tokens, x.usage.input_tokens_details.cached_tokens) AS s_cached,
  CASE WHEN x.usage.prompt_tokens_details.cached_tokens IS NOT NULL THEN 'usage.prompt_tokens_details.cached_tokens'
       ELSE 'usage.input_tokens_details.cached_tokens' END AS f_cached,
  NULL AS s_write, NULL AS f_write,
  coalesce(x.usage.completion_tokens, x.usage.output_tokens) AS s_output,
  CASE WHEN x.usage.completion_tokens IS NOT NULL THEN 'usage.completion_tokens'
       WHEN x.usage.output_tokens IS NOT NULL OR x.object = 'response' THEN 'usage.output_tokens'
       ELSE 'usage.completion_tokens' END AS f_output,
  s_session, s_start, NULL AS s_end,
  'openai' AS provider_name, NULL AS request_model, x.model AS response_model, CAST(NULL AS JSON) AS content
FROM j;
