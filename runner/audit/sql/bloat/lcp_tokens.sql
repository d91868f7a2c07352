-- How many tokens a prefix cache could reuse: the longest common prefix of the token ids (from --tokenizer)
-- of each call's prompt and the previous call's. When the shorter id list starts the longer one (a prompt
-- that extends the previous one) a single comparison settles it; otherwise a binary search, as a chain of
-- projections (bloat/macros.sql): the joins spill like any other, nothing else is held.
CREATE OR REPLACE TEMP TABLE _lcp_tokens AS
WITH q AS (
  SELECT p.rid, a.ids AS a, b.ids AS b, least(len(a.ids), len(b.ids)) AS n
  FROM _pairs p JOIN _ids a ON a.rid = p.prev_rid JOIN _ids b ON b.rid = p.rid
),
t0 AS (
  SELECT rid, a, b,
         -- the last common id first: lists that differ early mostly differ there too, and are not sliced
         CASE WHEN (n = 0 OR a[n] = b[n]) AND a[1:n] = b[1:n] THEN kv_lcp_start(n, n) ELSE kv_lcp_start(0, n - 1) END AS s
  FROM q
),
t1 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t0),
t2 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t1),
t3 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t2),
t4 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t3),
t5 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t4),
t6 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t5),
t7 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t6),
t8 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t7),
t9 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t8),
t10 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t9),
t11 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t10),
t12 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t11),
t13 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t12),
t14 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t13),
t15 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t14),
t16 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t15),
t17 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t16),
t18 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t17),
t19 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t18),
t20 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t19),
t21 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t20),
t22 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t21),
t23 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t22),
t24 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t23),
t25 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t24),
t26 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t25),
t27 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t26),
t28 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t27),
t29 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t28),
t30 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t29),
t31 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t30),
t32 AS (SELECT * REPLACE (kv_lcp_step(a, b, s) AS s) FROM t31),
done AS (SELECT rid, s.lo AS lcp_tokens FROM t32)
SELECT * FROM done;
