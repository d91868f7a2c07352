-- A TTL eviction policy swept over TTLs: a session's KV is dropped `ttl_s` after its last activity (or
-- at its disconnect, if logged); ttl_s NULL is "never evict", the baseline. Per TTL:
--   held / freed byte-seconds and the mean bytes held over the log's time span,
--   peak bytes held (sampled at $buckets instants, like the leakage timeline),
--   recompute_tokens: context a session had to prefill again because it came back after eviction,
--   capacity: with memory M, the active sessions this traffic's shape supports is
--     M x (mean active sessions) / (mean bytes held), so evicting multiplies capacity by
--     held(never) / held(ttl). M is the measured figure passed in ($memory_bytes) or, failing that,
--     the peak this workload held without eviction (the page says which).
-- When a segment's KV is dropped under TTL ttl_s (NULL: never, it stays to t_end).
CREATE OR REPLACE TEMP MACRO kv_ttl_evict(t_start, t_end, t_act, t_disc, ttl_s) AS
  CASE WHEN ttl_s IS NULL THEN t_end
       ELSE least(t_end, greatest(t_start,
              CASE WHEN t_disc IS NOT NULL THEN least(t_disc, t_act + ttl_s) ELSE t_act + ttl_s END)) END;
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
  SELECT ttl.ttl_s, s.t_start, s.t_end, s.kv_bytes, s.ctx_tokens, s.is_last, s.ks,
         kv_ttl_evict(s.t_start, s.t_end, s.t_act, s.t_disc, ttl.ttl_s) AS t_evict
  FROM (SELECT *, CASE WHEN win.w > 0 THEN least($buckets, greatest(0, floor((t_start - win.t0) / win.w)))::INTEGER END AS ks
        FROM _seg, win) s, ttl  -- ks: the sample bucket the segment starts in (the same for every TTL)
),
-- One pass over e: per TTL, the byte-seconds held and the tokens recomputed; per (TTL, start bucket, evict
-- bucket), the bytes of the segments resident for a while (a few thousand groups). The timeline's +bytes at
-- the start bucket and -bytes at the evict bucket are taken from those groups (ev, b below) rather than from
-- two events per segment and TTL. With the formula's bytes/token (a whole number) kv_bytes are whole numbers
-- and these sums are exact below 2^53 bytes, so regrouping them changes nothing; with a fractional measured
-- figure they may differ in the last bits, as any parallel sum's order already makes them.
g AS (
  SELECT ttl_s, ks, ke, grouping(ks) AS whole_ttl, sum((t_evict - t_start) * kv_bytes) AS held_bs,
         coalesce(sum(ctx_tokens) FILTER (WHERE NOT is_last AND t_evict < t_end), 0) AS recompute_tokens,
         sum(kv_bytes) FILTER (WHERE t_evict > t_start) AS d
  FROM (SELECT *, CASE WHEN win.w > 0 THEN least($buckets, greatest(0, floor((t_evict - win.t0) / win.w)))::INTEGER END AS ke
        FROM e, win)
  GROUP BY GROUPING SETS ((ttl_s), (ttl_s, ks, ke))
),
agg AS (
  SELECT ttl_s, held_bs, recompute_tokens FROM g WHERE whole_ttl = 1
),
-- Sessions evicted at least once, per TTL. A segment's eviction time only grows with the TTL, so if a
-- session is evicted at some TTL it is at every smaller one: each session needs only the largest TTL that
-- evicts it (max_ttl), and evicted_sessions(ttl) counts the sessions with max_ttl >= ttl (125k sessions,
-- not a DISTINCT over every segment x TTL). kv_ttl_evict(...) < t_end is rewritten without changing any
-- arithmetic: least(t_end, x) < t_end <=> x < t_end, greatest(t_start, x) < t_end <=> both are, and
-- least(t_disc, t_act + ttl) < t_end <=> either is (exact selections, no rounding), with the very same
-- t_act + ttl_s sum. Each segment is kept only at its largest evicting TTL (evicted at ttl_s, not at the
-- next larger one), so the grouping sees at most one row per segment.
tt AS (
  SELECT ttl_s, lead(ttl_s) OVER (ORDER BY ttl_s) AS next_ttl FROM (SELECT DISTINCT ttl_s FROM ttl WHERE ttl_s IS NOT NULL)
),
ses AS (
  SELECT max(tt.ttl_s) AS max_ttl
  FROM (SELECT session_id, t_act, t_end, coalesce(t_disc < t_end, false) AS disc_evicts  -- evicted by its disconnect
        FROM _seg WHERE t_start < t_end) s, tt
  WHERE (s.disc_evicts OR s.t_act + tt.ttl_s < s.t_end)
    AND (tt.next_ttl IS NULL OR NOT (s.disc_evicts OR s.t_act + tt.next_ttl < s.t_end))
  GROUP BY s.session_id
),
nev AS (
  SELECT max_ttl, count(*) AS n FROM ses GROUP BY max_ttl
),
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
