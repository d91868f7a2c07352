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
{include:ingest/openai_object_record};

CREATE OR REPLACE TEMP TABLE _shape AS
WITH o AS (
  SELECT *, CASE WHEN $root = '$' THEN x ELSE x.response.body END AS obj
  FROM kv_shape_lines($session_keys, $time_keys, kv_openai_object_record(),
    kv_openai_default_keys($root, $session_keys, $time_keys) IS NOT NULL)
),
{include:ingest/openai_object_rows};
