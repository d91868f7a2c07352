-- The calls that have a time, as metrics/segments.sql and kv_log_end read them (epoch seconds). A view: re-read per
-- use (a scan of the calls) rather than held.
CREATE OR REPLACE TEMP VIEW _timed_calls AS
  SELECT session_id, source, line,
         epoch_us(coalesce(start_time, end_time)) / 1e6 AS t_start,
         epoch_us(coalesce(end_time, start_time)) / 1e6 AS t_act,
         input_tokens + output_tokens AS ctx_tokens,
         epoch_us(disconnected_at) / 1e6 AS disc
  FROM _calls  -- this audit's calls only (a view over _staged)
  WHERE coalesce(start_time, end_time) IS NOT NULL;

-- The log's end: the last activity or disconnect of any timed call (metrics/segments.sql: where a session's last KV
-- stops being held). One value per share of the calls; the audit's is the largest.
CREATE OR REPLACE TEMP MACRO kv_log_end() AS TABLE
SELECT max(greatest(t_act, coalesce(disc, t_act))) AS t_log_end FROM _timed_calls;
