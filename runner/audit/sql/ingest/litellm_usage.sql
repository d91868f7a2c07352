-- The usage object's figures of rows read with kv_litellm_record, whose metadata is JSON text (the line-exact
-- reader, ingest/litellm.sql, and the text fast reader, ingest/litellm_fast_text.sql), from p: metadata's
-- usage_object (a spend-log row's metadata is a JSON string, parsed once more), else hidden_params'. The typed
-- fast reader (ingest/litellm_fast.sql) has its own, from the figures its record types. Not run alone: each
-- includes it after its p, before ingest/litellm_rows.sql.
m AS (  -- a spend-log row keeps metadata as JSON text
  SELECT *, CASE WHEN NOT starts_with(x.metadata, '"') THEN x.metadata
                 WHEN json_valid(json_extract_string(x.metadata, '$'))
                 THEN CAST(json_extract_string(x.metadata, '$') AS JSON) ELSE x.metadata END AS md
  FROM p
),
um AS (  -- metadata.usage_object (its text: NULL when absent or null) and its figures, in one parse
  SELECT *, CASE WHEN md IS NOT NULL THEN json_extract_string(md, ['$.usage_object',
              '$.usage_object.prompt_tokens_details.cached_tokens', '$.usage_object.cache_read_input_tokens',
              '$.usage_object.cache_creation_input_tokens']) END AS um
  FROM m
),
u AS (  -- [cached_tokens, cache_read_input_tokens, cache_creation_input_tokens] of the usage object: metadata's,
        -- else hidden_params'
  SELECT *, CASE WHEN um[1] IS NOT NULL THEN um[2:4]
                 ELSE kv_litellm_hidden_usage(x.hidden_params.usage_object) END AS usage
  FROM um
)
