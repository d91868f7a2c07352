-- One audit's prompt-bloat totals (token-weighted over every call with logged content). The provider's
-- own counts for those calls are read through to_json, so DBs written before token_bloat had them still
-- build (the figure is then left out).
WITH b AS (
  SELECT *, (to_json(t) ->> 'input_tokens')::BIGINT AS input_sum,
         (to_json(t) ->> 'cached_input_tokens')::BIGINT AS cached_sum
  FROM token_bloat t
  WHERE audit_id = $audit_id
)
SELECT count(*) AS sessions, sum(n_calls) AS calls, sum(prompt_tokens) AS prompt_tokens,
       sum(reusable_tokens) / nullif(sum(prompt_tokens), 0) AS achievable_pcer,
       sum(stable_prefix_tokens) / nullif(sum(prompt_tokens), 0) AS stable_prefix_pcer,
       sum(cached_sum) / nullif(sum(input_sum), 0) AS actual_pcer,
       count(*) FILTER (WHERE broken_pairs > 0) AS sessions_with_breaks,
       count(*) FILTER (WHERE diverge_in = 'system prompt') AS breaks_in_system_prompt,
       any_value(token_reason) AS token_reason
FROM b;
