-- A TTL eviction policy swept over TTLs: a session's KV is dropped `ttl_s` after its last activity (or
-- at its disconnect, if logged); ttl_s NULL is "never evict", the baseline. Per TTL:
--   held / freed byte-seconds and the mean bytes held over the log's time span,
--   peak bytes held (sampled at $buckets instants, like the leakage timeline),
--   recompute_tokens: context a session had to prefill again because it came back after eviction,
--   capacity: with memory M, the active sessions this traffic's shape supports is
--     M x (mean active sessions) / (mean bytes held), so evicting multiplies capacity by
--     held(never) / held(ttl). M is the measured figure passed in ($memory_bytes) or, failing that,
--     the peak this workload held without eviction (the page says which).
INSERT INTO token_ttl_sweep BY NAME
WITH ttl AS (
  SELECT unnest($ttls::DOUBLE[]) AS ttl_s UNION ALL SELECT NULL::DOUBLE
),
win AS (
  SELECT min(t_start) AS t0, max(t_end) - min(t_start) AS span_s,
         (max(t_end) - min(t_start)) / $buckets AS w,
         -- active = resident and not yet idle
         sum(greatest(0, least(t_end, greatest(t_idle, t_start)) - t_start)) AS active_session_s
  FROM _seg
),
e AS NOT MATERIALIZED (  -- 6 TTLs x every segment: recomputed per use, never held (it would be the biggest thing in memory)
  SELECT ttl.ttl_s, s.session_id, s.t_start, s.t_end, s.kv_bytes, s.ctx_tokens, s.is_last,
         CASE WHEN ttl.ttl_s IS NULL THEN s.t_end
              ELSE least(s.t_end, greatest(s.t_start,
                     CASE WHEN s.t_disc IS NOT NULL THEN least(s.t_disc, s.t_act + ttl.ttl_s)
                          ELSE s.t_act + ttl.ttl_s END)) END AS t_evict
  FROM _seg s, ttl
),
agg AS (
  SELECT ttl_s, sum((t_evict - t_start) * kv_bytes) AS held_bs,
         coalesce(sum(ctx_tokens) FILTER (WHERE NOT is_last AND t_evict < t_end), 0) AS recompute_tokens,
         count(DISTINCT session_id) FILTER (WHERE t_evict < t_end) AS evicted_sessions
  FROM e GROUP BY ttl_s
),
ev AS (
  SELECT ttl_s, t_start AS t, kv_bytes AS d FROM e WHERE t_evict > t_start
  UNION ALL
  SELECT ttl_s, t_evict, -kv_bytes FROM e WHERE t_evict > t_start
),
b AS (
  SELECT ttl_s, least($buckets, greatest(0, floor((t - win.t0) / win.w)))::INTEGER AS k, sum(d) AS d
  FROM ev, win WHERE win.w > 0 GROUP BY ALL
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
  SELECT a.ttl_s, a.held_bs, a.recompute_tokens, a.evicted_sessions, p.peak_held_bytes,
         CASE WHEN a.held_bs > 0 AND win.span_s > 0
              THEN floor(mem.memory_bytes * (win.active_session_s / win.span_s) / (a.held_bs / win.span_s)) END
           AS active_sessions_fit
  FROM agg a LEFT JOIN peak p ON p.ttl_s IS NOT DISTINCT FROM a.ttl_s, win, mem
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
