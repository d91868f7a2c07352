-- The prefix-reuse experiment: prefill time per turn and mode, with the tokens cached and computed.
SELECT p.run_id, r.model, r.dtype, r.device_name, p.turn, p.mode, p.n_sessions, p.prompt_tokens, p.cached_tokens,
       p.computed_tokens, p.time_ms, p.p25_ms, p.p75_ms, p.n, p.spread_wide, p.copy_ms, p.max_abs_logit_diff,
       p.logits_match, p.system_tokens, p.user_tokens, p.assistant_tokens,
       p.time_ms / nullif(rc.time_ms, 0) AS time_vs_recompute
FROM prefix_reuse p JOIN runs r USING (run_id)
LEFT JOIN prefix_reuse rc ON rc.run_id = p.run_id AND rc.turn = p.turn AND rc.mode = 'recompute'
ORDER BY p.run_id DESC, p.turn, CASE p.mode WHEN 'recompute' THEN 0 WHEN 'system_prefix' THEN 1 ELSE 2 END;
