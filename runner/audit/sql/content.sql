-- The logged messages of each valid call, flattened to text for the prompt-bloat analysis:
--   prompt_text     every message as "role: text", in order (system first where the API keeps it apart)
--   system_text     the system / developer instructions
--   last_user_text  the newest user message: what this turn added
-- rid is the call's row in _staged, and the call's token counts come along: later steps never read _staged. Content lives in temporary tables only; the DB never stores log
-- text beyond the short snippets of the findings. Run once per slice of rids [$lo, $hi) (engine.py): the
-- per-call aggregation of messages cannot spill to disk, so a slice bounds its memory.
CREATE TEMP TABLE IF NOT EXISTS _content (
  rid BIGINT, source VARCHAR, line BIGINT, session_id VARCHAR, t TIMESTAMP, prompt_text VARCHAR,
  system_text VARCHAR, last_user_text VARCHAR, prompt_chars BIGINT, input_tokens BIGINT, cached_input_tokens BIGINT
);
INSERT INTO _content
WITH c AS (
  SELECT rowid AS rid, source, line, session_id, coalesce(start_time, end_time) AS t, input_tokens,
         cached_input_tokens,
         kv_nn(json_extract(content, '$.system')) AS sys,
         CASE json_type(content, '$.messages')
           WHEN 'ARRAY' THEN json_extract(content, '$.messages[*]')
           WHEN 'VARCHAR' THEN [json_object('role', 'user', 'content', json_extract(content, '$.messages'))]
         END AS msgs
  FROM _staged WHERE reason IS NULL AND content IS NOT NULL AND rowid >= $lo AND rowid < $hi
),
m AS (
  SELECT rid, unnest(msgs) AS msg, generate_subscripts(msgs, 1) AS i FROM c WHERE msgs IS NOT NULL
),
parts AS (
  SELECT rid, 0 AS i, 'system' AS role, kv_text(sys) AS text FROM c WHERE sys IS NOT NULL
  UNION ALL
  SELECT rid, i, coalesce(json_extract_string(msg, '$.role'), 'unknown'),
         kv_text(coalesce(kv_nn(json_extract(msg, '$.content')), kv_nn(json_extract(msg, '$.parts'))))
  FROM m
),
agg AS (
  SELECT rid,
         string_agg(role || ': ' || coalesce(text, ''), chr(10) ORDER BY i) AS prompt_text,
         string_agg(text, chr(10) ORDER BY i) FILTER (WHERE role IN ('system', 'developer')) AS system_text,
         arg_max(text, i) FILTER (WHERE role = 'user') AS last_user_text
  FROM parts GROUP BY rid
)
SELECT c.rid, c.source, c.line, c.session_id, c.t, a.prompt_text, a.system_text, a.last_user_text,
       length(a.prompt_text) AS prompt_chars, c.input_tokens, c.cached_input_tokens
FROM c JOIN agg a USING (rid);
