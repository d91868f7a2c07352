-- The text either side of each session's earliest prefix break (_breaks, bloat/breaks.sql): the two prompt
-- texts of the pair are rebuilt from their messages and cut. Per slice of rids [$lo, $hi) (prompt_bloat.py):
-- the per-call text aggregation cannot spill, so a slice bounds it.
UPDATE _breaks SET where_ = x.where_, ctx = x.ctx, prev = x.prev, next = x.next FROM (
  WITH b AS (SELECT * FROM _breaks WHERE rid >= $lo AND rid < $hi),
  parts AS (
    SELECT rid, unnest(roles) AS role, unnest(texts) AS text, generate_subscripts(roles, 1) AS i FROM _content
    WHERE rid IN (SELECT rid FROM b UNION ALL SELECT prev_rid FROM b)
  ),
  txt AS (
    SELECT rid, kv_prompt_text(role, text, i) AS prompt_text FROM parts GROUP BY rid
  )
  SELECT b.rid,
         -- where the first differing character falls: inside the system prompt's text, or after it
         CASE WHEN c.system_text IS NOT NULL
                   AND b.off < strpos(cur.prompt_text, c.system_text) + length(c.system_text) - 1
              THEN 'system prompt' ELSE 'conversation' END AS where_,
         right(left(cur.prompt_text, b.off), 40) AS ctx,
         substr(prev.prompt_text, b.off + 1, 40) AS prev,
         substr(cur.prompt_text, b.off + 1, 40) AS next
  FROM b JOIN txt cur ON cur.rid = b.rid JOIN txt prev ON prev.rid = b.prev_rid JOIN _content c ON c.rid = b.rid
) x
WHERE _breaks.rid = x.rid;
