-- The calls of bloat/content.sql whose messages are not plain, one row per message, for a slice of rids
-- [$lo, $hi) (prompt_bloat.py): the per-call aggregation cannot spill, so a slice bounds it.
INSERT INTO _content
WITH c AS (
  SELECT rowid AS rid, source, line, session_id, coalesce(start_time, end_time) AS t, input_tokens,
         cached_input_tokens,
         kv_nn(json_extract(content, '$.system')) AS sys,
         CASE json_type(content, '$.messages')
           WHEN 'ARRAY' THEN json_extract(content, '$.messages[*]')
           WHEN 'VARCHAR' THEN [json_object('role', 'user', 'content', json_extract(content, '$.messages'))]
         END AS msgs
  FROM _staged WHERE reason IS NULL AND NOT blank AND content IS NOT NULL AND rowid >= $lo AND rowid < $hi
    AND rowid IN (SELECT rid FROM _content WHERE rid >= $lo AND rid < $hi AND roles IS NULL)
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
         list(role ORDER BY i) AS roles,
         list(coalesce(text, '') ORDER BY i) AS texts,
         string_agg(text, chr(10) ORDER BY i) FILTER (WHERE role IN ('system', 'developer')) AS system_text,
         arg_max(text, i) FILTER (WHERE role = 'user') AS last_user_text,
         sum(length(role) + 2 + length(coalesce(text, ''))) + count(*) - 1 AS prompt_chars
  FROM parts GROUP BY rid
)
SELECT c.rid, c.source, c.line, c.session_id, c.t, a.roles, a.texts, a.system_text, a.last_user_text,
       a.prompt_chars, c.input_tokens, c.cached_input_tokens
FROM c JOIN agg a USING (rid);

-- A call with no message and no system prompt has no prompt: it is not in _content.
DELETE FROM _content WHERE rid >= $lo AND rid < $hi AND (roles IS NULL OR len(roles) = 0);
