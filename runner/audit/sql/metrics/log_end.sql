-- The log's end on this connection (metrics/timed_calls.sql kv_log_end): where the last KV stops being held.
SELECT t_log_end FROM kv_log_end();
