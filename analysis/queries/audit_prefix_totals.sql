-- Per run and mode, over the turns timed: tokens computed vs cached and prefill time, against recompute.
WITH t AS (
  SELECT run_id, mode, sum(computed_tokens) AS computed_tokens, sum(cached_tokens) AS cached_tokens,
         sum(prompt_tokens) AS prompt_tokens, sum(time_ms) AS time_ms, count(*) AS turns,
         bool_and(logits_match) AS logits_match, max(max_abs_logit_diff) AS max_abs_logit_diff
  FROM prefix_reuse GROUP BY run_id, mode
)
SELECT t.run_id, r.model, r.dtype, r.device_name, t.mode, t.turns, t.prompt_tokens, t.cached_tokens, t.computed_tokens,
       t.cached_tokens / nullif(t.prompt_tokens, 0) AS pcer, t.time_ms,
       1 - t.computed_tokens / nullif(rc.computed_tokens, 0) AS computed_saved,
       1 - t.time_ms / nullif(rc.time_ms, 0) AS time_saved, t.logits_match, t.max_abs_logit_diff
FROM t JOIN runs r USING (run_id) JOIN t rc ON rc.run_id = t.run_id AND rc.mode = 'recompute'
ORDER BY t.run_id DESC, CASE t.mode WHEN 'recompute' THEN 0 WHEN 'system_prefix' THEN 1 ELSE 2 END;
