-- The searches of bloat/pairs.sql that ran off the end of a line, finished over the whole prompt texts from what
-- is known equal. Rare; run per slice of rids [$lo, $hi) (prompt_bloat.py), as it rebuilds the texts and
-- the per-call text aggregation cannot spill.
UPDATE _pairs SET lcp_chars = f.lcp FROM (
  WITH x AS (
    SELECT rid, prev_rid, lcp_known, least(prompt_chars, prev_chars) AS hi FROM _pairs
    WHERE prev_rid IS NOT NULL AND lcp_chars IS NULL AND rid >= $lo AND rid < $hi
  ),
  parts AS (
    SELECT rid, unnest(roles) AS role, unnest(texts) AS text, generate_subscripts(roles, 1) AS i FROM _content
    WHERE rid IN (SELECT rid FROM x UNION ALL SELECT prev_rid FROM x)
  ),
  txt AS (
    SELECT rid, kv_prompt_text(role, text, i) AS prompt_text FROM parts GROUP BY rid
  ),
  ts0 AS (
    SELECT x.rid, pa.prompt_text AS a, pb.prompt_text AS b, kv_lcp_start(x.lcp_known, x.hi) AS s
    FROM x JOIN txt pa ON pa.rid = x.prev_rid JOIN txt pb ON pb.rid = x.rid
  ),
{include:bloat/lcp_text_search},
  done AS (SELECT rid, s.lo AS lcp FROM ts32)
  SELECT * FROM done
) f
WHERE _pairs.rid = f.rid;
