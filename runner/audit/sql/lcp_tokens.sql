-- The same binary search over token ids (from --tokenizer): how many tokens a prefix cache could reuse.
-- Per slice of rids [$lo, $hi), like lcp_chars.sql.
CREATE TEMP TABLE IF NOT EXISTS _lcp_tokens (rid BIGINT, lcp_tokens BIGINT);
INSERT INTO _lcp_tokens
WITH RECURSIVE q AS (
  SELECT p.rid, a.ids AS prev_ids, b.ids AS ids
  FROM _pairs p JOIN _ids a ON a.rid = p.prev_rid JOIN _ids b ON b.rid = p.rid
  WHERE p.rid >= $lo AND p.rid < $hi
),
bs(rid, lo, hi) AS (
  SELECT rid, 0, least(len(prev_ids), len(ids)) FROM q
  UNION ALL
  SELECT bs.rid,
         CASE WHEN q.prev_ids[1:(bs.lo + bs.hi + 1) // 2] = q.ids[1:(bs.lo + bs.hi + 1) // 2]
              THEN (bs.lo + bs.hi + 1) // 2 ELSE bs.lo END,
         CASE WHEN q.prev_ids[1:(bs.lo + bs.hi + 1) // 2] = q.ids[1:(bs.lo + bs.hi + 1) // 2]
              THEN bs.hi ELSE (bs.lo + bs.hi + 1) // 2 - 1 END
  FROM bs JOIN q ON q.rid = bs.rid
  WHERE bs.lo < bs.hi
)
SELECT rid, lo AS lcp_tokens FROM bs WHERE lo = hi;
