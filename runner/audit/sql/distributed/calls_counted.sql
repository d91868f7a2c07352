-- A reduce partition's valid calls (its progress report).
SELECT coalesce(sum(n_calls), 0) FROM _call_stats;
