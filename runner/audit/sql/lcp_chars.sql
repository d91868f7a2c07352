-- Longest common prefix, in characters, of each call's prompt with the previous call's: a binary
-- search run for all pairs at once (about log2(prompt length) rounds). The strings stay in _pairs; the
-- recursion carries only the bounds, so its working set is three integers per pair.
-- Run per slice of rids [$lo, $hi) (engine.py): the join inside the recursion holds its slice of prompts
-- in memory and cannot spill, so a slice bounds it.
CREATE TEMP TABLE IF NOT EXISTS _lcp_chars (rid BIGINT, lcp_chars BIGINT);
INSERT INTO _lcp_chars
WITH RECURSIVE bs(rid, lo, hi) AS (
  SELECT rid, 0, least(length(prev_text), length(prompt_text)) FROM _pairs
  WHERE prev_text IS NOT NULL AND rid >= $lo AND rid < $hi
  UNION ALL
  SELECT bs.rid,
         CASE WHEN left(p.prev_text, (bs.lo + bs.hi + 1) // 2) = left(p.prompt_text, (bs.lo + bs.hi + 1) // 2)
              THEN (bs.lo + bs.hi + 1) // 2 ELSE bs.lo END,
         CASE WHEN left(p.prev_text, (bs.lo + bs.hi + 1) // 2) = left(p.prompt_text, (bs.lo + bs.hi + 1) // 2)
              THEN bs.hi ELSE (bs.lo + bs.hi + 1) // 2 - 1 END
  FROM bs JOIN (SELECT * FROM _pairs WHERE rid >= $lo AND rid < $hi) p ON p.rid = bs.rid
  WHERE bs.lo < bs.hi
)
SELECT rid, lo AS lcp_chars FROM bs WHERE lo = hi;
