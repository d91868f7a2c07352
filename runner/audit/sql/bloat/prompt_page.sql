-- A page of prompts as text, for --tokenizer (bloat/content.sql keeps each as its messages' roles and texts).
-- Keyset pages: inserting on the same connection would discard an open cursor's rows.
WITH page AS (SELECT rid, roles, texts FROM _content WHERE rid > $after ORDER BY rid LIMIT $page_rows),
parts AS (SELECT rid, unnest(roles) AS role, unnest(texts) AS text, generate_subscripts(roles, 1) AS i FROM page)
SELECT rid, kv_prompt_text(role, text, i) AS prompt_text FROM parts GROUP BY rid ORDER BY rid;
