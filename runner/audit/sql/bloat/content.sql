-- The logged messages of each valid call, flattened to text for the prompt-bloat analysis. The prompt a
-- call sent is, as text (prompt_text), every message as "role: text" joined by newlines, in order (system
-- first where the API keeps it apart); it is kept as its parts:
--   roles, texts    one element per message (texts never NULL: a message without text is "role: ")
--   prompt_chars    length(prompt_text)
--   system_text     the system / developer instructions
--   last_user_text  the newest user message: what this turn added
-- prompt_text itself is rebuilt only where one is needed (the break shown per session, --tokenizer).
-- rid is the call's row in _staged, and the call's token counts come along: later steps never read
-- _staged. Content lives in temporary tables only; the DB never stores log text beyond the short snippets
-- of the findings.
--
-- Two statements. The first takes the calls whose messages are plain: every message an object with a role
-- (any non-null JSON value) and a string content, at most one "system" message and no "developer" one.
-- Those need no per-message rows: each field comes out of the JSON as one list, in message order. Every
-- other call (content blocks, parts, null or missing fields, non-object messages) goes through the second
-- statement (bloat/content_rest.sql), one row per message, where the same definitions are spelled out in
-- full. The first is a streaming projection into the table, so it runs once over every call: slicing it
-- would only scan _staged once per slice. The second aggregates per call (cannot spill), so it runs per
-- slice of rids, and only for the slices that hold such calls (prompt_bloat.py).
CREATE TEMP TABLE IF NOT EXISTS _content (
  rid BIGINT, source VARCHAR, line BIGINT, session_id VARCHAR, t TIMESTAMP, roles VARCHAR[], texts VARCHAR[],
  system_text VARCHAR, last_user_text VARCHAR, prompt_chars BIGINT, input_tokens BIGINT, cached_input_tokens BIGINT
);
INSERT INTO _content
WITH c AS (
  -- ingest writes {"system":..,"messages":..} (json_object): the common head is told apart by its text,
  -- which is exact (a JSON text that starts so has a null system and an array of messages).
  SELECT rowid AS rid, source, line, session_id, coalesce(start_time, end_time) AS t, input_tokens,
         cached_input_tokens, content,
         CASE WHEN starts_with(content, '{"system":null,') THEN NULL
              ELSE kv_nn(json_extract(content, '$.system')) END AS sys,
         CASE WHEN starts_with(content, '{"system":null,"messages":[') THEN 'ARRAY'
              ELSE json_type(content, '$.messages') END AS mtype
  FROM _staged WHERE reason IS NULL AND NOT blank AND content IS NOT NULL
),
a AS (
  -- `[*]` paths skip the messages that lack the field: the lists line up with the messages only when
  -- each is as long as the array. A string in place of the messages is one user message; no messages
  -- (null, an object, a number) leaves the system prompt alone, if any.
  SELECT *,
         CASE mtype WHEN 'ARRAY' THEN json_array_length(content, '$.messages') WHEN 'VARCHAR' THEN 1 ELSE 0 END AS n,
         CASE mtype WHEN 'ARRAY' THEN json_extract_string(content, '$.messages[*].role')
                    WHEN 'VARCHAR' THEN ['user'] ELSE [] END AS r,
         CASE mtype WHEN 'ARRAY' THEN json_extract_string(content, '$.messages[*].content')
                    WHEN 'VARCHAR' THEN [json_extract_string(content, '$.messages')] ELSE [] END AS x,
         CASE mtype WHEN 'ARRAY' THEN json_type(content, '$.messages[*].content')
                    WHEN 'VARCHAR' THEN ['VARCHAR'] ELSE [] END AS xt
  FROM c
),
plain AS (
  SELECT *,
         len(r) = n AND list_aggregate(r, 'count') = n AND len(xt) = n
         -- every content a string: the least and the greatest type both VARCHAR (half the cost of list_distinct)
         AND (n = 0 OR (list_aggregate(xt, 'min') = 'VARCHAR' AND list_aggregate(xt, 'max') = 'VARCHAR'))
         AND list_position(r, 'developer') IS NULL
         AND (list_position(r, 'system') IS NULL
              OR list_position(r, 'system') + list_position(list_reverse(r), 'system') = n + 1) AS plain
  FROM a
),
f AS (
  SELECT rid, source, line, session_id, t, input_tokens, cached_input_tokens, kv_text(sys) AS sys_text,
         CASE WHEN NOT plain THEN NULL WHEN sys IS NULL THEN r ELSE list_prepend('system', r) END AS roles,
         CASE WHEN NOT plain THEN NULL WHEN sys IS NULL THEN x ELSE list_prepend(coalesce(kv_text(sys), ''), x) END AS texts,
         x[list_position(r, 'system')] AS msg_system,
         x[len(r) + 1 - list_position(list_reverse(r), 'user')] AS last_user_text
  FROM plain
)
-- No WHERE here: a filter would be pushed down into the JSON expressions above and evaluate them twice.
-- The calls that are not plain come out with NULL roles, and the calls with no message and no system
-- prompt with empty ones; bloat/content_rest.sql replaces the first and drops the second.
SELECT rid, source, line, session_id, t, roles, texts,
       CASE WHEN sys_text IS NULL THEN msg_system WHEN msg_system IS NULL THEN sys_text
            ELSE sys_text || chr(10) || msg_system END AS system_text,
       last_user_text,
       length(array_to_string(roles, '')) + length(array_to_string(texts, '')) + 3 * len(roles) - 1 AS prompt_chars,
       input_tokens, cached_input_tokens
FROM f;
