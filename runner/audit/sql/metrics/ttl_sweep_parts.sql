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
-- The sweep's sums over segments, per TTL and per (TTL, start sample, evict sample), and the sessions by the
-- largest TTL that evicts them: sums, so the whole audit's are the sums of its shares' (runner/audit/distributed.py).
-- metrics/ttl_sweep.sql turns them into the sweep.
CREATE OR REPLACE TEMP TABLE _ttl_parts AS
WITH ttl AS (
  SELECT unnest($ttls::DOUBLE[]) AS ttl_s UNION ALL SELECT NULL::DOUBLE
),
win AS (  -- the WHOLE audit's span (metrics/seg_window.sql), whichever share of its segments _seg holds
  SELECT t0, t1 - t0 AS span_s, (t1 - t0) / $buckets AS w, active_session_s FROM _seg_window
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
         coalesce(sum(ctx_tokens) FILTER (WHERE NOT is_last AND t_evict < t_end), 0)::BIGINT AS recompute_tokens,
         sum(kv_bytes) FILTER (WHERE t_evict > t_start) AS d
  FROM (SELECT *, CASE WHEN win.w > 0 THEN least($buckets, greatest(0, floor((t_evict - win.t0) / win.w)))::INTEGER END AS ke
        FROM e, win)
  GROUP BY GROUPING SETS ((ttl_s), (ttl_s, ks, ke))
)
SELECT * FROM g;

CREATE OR REPLACE TEMP TABLE _ttl_evicted AS
WITH ttl AS (
  SELECT unnest($ttls::DOUBLE[]) AS ttl_s UNION ALL SELECT NULL::DOUBLE
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
)
SELECT max_ttl, n FROM nev;
