-- Calls that named no session (each is its own), for the command's output.
SELECT coalesce(sum(n_unnamed), 0) FROM _call_stats;
