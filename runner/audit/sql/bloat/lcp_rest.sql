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
  f0 AS (
    SELECT x.rid, pa.prompt_text AS a, pb.prompt_text AS b, kv_lcp_start(x.lcp_known, x.hi) AS s
    FROM x JOIN txt pa ON pa.rid = x.prev_rid JOIN txt pb ON pb.rid = x.rid
  ),
f1 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f0),
f2 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f1),
f3 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f2),
f4 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f3),
f5 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f4),
f6 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f5),
f7 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f6),
f8 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f7),
f9 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f8),
f10 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f9),
f11 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f10),
f12 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f11),
f13 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f12),
f14 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f13),
f15 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f14),
f16 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f15),
f17 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f16),
f18 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f17),
f19 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f18),
f20 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f19),
f21 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f20),
f22 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f21),
f23 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f22),
f24 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f23),
f25 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f24),
f26 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f25),
f27 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f26),
f28 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f27),
f29 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f28),
f30 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f29),
f31 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f30),
f32 AS (SELECT * REPLACE (kv_lcp_step_text(a, b, s) AS s) FROM f31),
  done AS (SELECT rid, s.lo AS lcp FROM f32)
  SELECT * FROM done
) f
WHERE _pairs.rid = f.rid;
