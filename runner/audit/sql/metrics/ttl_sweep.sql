-- The TTL sweep (see metrics/ttl_sweep_parts.sql for the policy) from its sums over segments: _ttl_parts, _ttl_evicted,
-- and the span _seg_window.
INSERT INTO token_ttl_sweep BY NAME
WITH ttl AS (
  SELECT unnest($ttls::DOUBLE[]) AS ttl_s UNION ALL SELECT NULL::DOUBLE
),
win AS (  -- the WHOLE audit's span (metrics/seg_window.sql), whichever share of its segments _seg holds
  SELECT t0, t1 - t0 AS span_s, (t1 - t0) / $buckets AS w, active_session_s FROM _seg_window
),
g AS (  -- metrics/ttl_sweep_parts.sql, summed over the shares of the segments
  SELECT ttl_s, ks, ke, whole_ttl, sum(held_bs) AS held_bs, sum(recompute_tokens) AS recompute_tokens, sum(d) AS d
  FROM _ttl_parts GROUP BY ttl_s, ks, ke, whole_ttl
),
agg AS (
  SELECT ttl_s, held_bs, recompute_tokens FROM g WHERE whole_ttl = 1
),
nev AS (SELECT max_ttl, sum(n) AS n FROM _ttl_evicted GROUP BY max_ttl),
evs AS (  -- one row per TTL (a TTL listed twice is one group in agg too); NULL (never evict) matches nothing: 0
  SELECT ttl.ttl_s, coalesce(sum(nev.n), 0) AS evicted_sessions
  FROM (SELECT DISTINCT ttl_s FROM ttl) ttl LEFT JOIN nev ON nev.max_ttl >= ttl.ttl_s GROUP BY ttl.ttl_s
),
pa AS (  -- d NULL: no segment of the group is resident at all; ks NULL: no time span to sample
  SELECT ttl_s, ks, ke, d FROM g WHERE whole_ttl = 0 AND d IS NOT NULL AND ks IS NOT NULL
),
ev AS (
  SELECT ttl_s, ks AS k, d FROM pa
  UNION ALL
  SELECT ttl_s, ke, -d FROM pa
),
b AS (
  SELECT ttl_s, k, sum(d) AS d FROM ev GROUP BY ALL
),
grid AS (
  SELECT ttl.ttl_s, range::INTEGER AS k FROM ttl, range(0, $buckets)
),
cum AS (
  SELECT g.ttl_s, g.k,
         sum(coalesce(b.d, 0)) OVER (PARTITION BY g.ttl_s ORDER BY g.k ROWS UNBOUNDED PRECEDING) AS held
  FROM grid g LEFT JOIN b ON b.ttl_s IS NOT DISTINCT FROM g.ttl_s AND b.k = g.k
),
peak AS (
  SELECT ttl_s, max(held) AS peak_held_bytes FROM cum GROUP BY ttl_s
),
base AS (
  SELECT a.held_bs AS held_never, p.peak_held_bytes AS peak_never
  FROM agg a JOIN peak p ON p.ttl_s IS NULL WHERE a.ttl_s IS NULL
),
mem AS (
  SELECT coalesce($memory_bytes::BIGINT, CAST(base.peak_never AS BIGINT)) AS memory_bytes,
         CASE WHEN $memory_bytes::BIGINT IS NOT NULL THEN $memory_source
              ELSE 'assumed: the memory this workload held at its peak without eviction (no measured figure)' END
           AS memory_source
  FROM base
),
fit AS (
  SELECT a.ttl_s, a.held_bs, a.recompute_tokens, evs.evicted_sessions, p.peak_held_bytes,
         CASE WHEN a.held_bs > 0 AND win.span_s > 0
              THEN floor(mem.memory_bytes * (win.active_session_s / win.span_s) / (a.held_bs / win.span_s)) END
           AS active_sessions_fit
  FROM agg a LEFT JOIN peak p ON p.ttl_s IS NOT DISTINCT FROM a.ttl_s JOIN evs ON evs.ttl_s IS NOT DISTINCT FROM a.ttl_s, win, mem
)
SELECT $audit_id AS audit_id, $run_id AS run_id, f.ttl_s, f.held_bs AS held_byte_seconds,
       base.held_never - f.held_bs AS freed_byte_seconds,
       (base.held_never - f.held_bs) / nullif(base.held_never, 0) AS freed_share,
       f.held_bs / nullif(win.span_s, 0) AS mean_held_bytes,
       f.peak_held_bytes, base.peak_never - f.peak_held_bytes AS freed_bytes_at_peak,
       f.recompute_tokens, f.evicted_sessions,
       base.held_never / nullif(f.held_bs, 0) AS capacity_multiplier,
       mem.memory_bytes, mem.memory_source, f.active_sessions_fit::BIGINT AS active_sessions_fit,
       (f.active_sessions_fit - (SELECT active_sessions_fit FROM fit WHERE ttl_s IS NULL))::BIGINT AS extra_sessions
FROM fit f, base, win, mem
ORDER BY f.ttl_s NULLS LAST;
