-- Prompt bloat per session, where message content was logged.
--   achievable_pcer   = sum over calls of (tokens shared with the previous prompt, from the start) / tokens:
--                       what a perfect prefix cache could have served, prompts as sent
--   stable_prefix_pcer = the same if every call had extended the previous prompt unchanged
--   actual_pcer       = what the provider reported for the same calls
-- The gap actual -> achievable is the provider's caching (block sizes, minimum lengths, cache expiry);
-- achievable -> stable is the prompt layout: something early in the prompt changes between calls (a
-- timestamp at the top of the system prompt is the classic). The earliest such break is reported
-- with a few characters either side so a reader can see what changed (bloat/breaks.sql).
INSERT INTO token_bloat BY NAME
WITH p AS (
  SELECT pr.session_id, pr.prev_rid, pr.lcp_chars, pr.prev_chars, pr.input_tokens, pr.cached_input_tokens,
         lt.lcp_tokens, ic.n_tokens, ip.n_tokens AS prev_n_tokens
  FROM _pairs pr
  LEFT JOIN _lcp_tokens lt USING (rid)
  LEFT JOIN _ids ic ON ic.rid = pr.rid
  LEFT JOIN _ids ip ON ip.rid = pr.prev_rid
),
s AS (
  SELECT session_id, count(*) AS n_calls, count(prev_rid) AS n_pairs,
         sum(n_tokens) AS prompt_tokens,
         sum(coalesce(lcp_tokens, 0)) AS reusable_tokens,
         sum(least(coalesce(prev_n_tokens, 0), n_tokens)) AS stable_prefix_tokens,
         sum(input_tokens) AS input_tokens, sum(cached_input_tokens) AS cached_input_tokens,
         sum(cached_input_tokens) / nullif(sum(input_tokens), 0) AS actual_pcer,
         count(*) FILTER (WHERE lcp_chars < prev_chars) AS broken_pairs
  FROM p GROUP BY session_id
)
SELECT $audit_id AS audit_id, $run_id AS run_id, s.session_id, n_calls, n_pairs, input_tokens, cached_input_tokens,
       prompt_tokens,
       CASE WHEN $has_tokens THEN reusable_tokens END AS reusable_tokens,
       CASE WHEN $has_tokens THEN stable_prefix_tokens END AS stable_prefix_tokens,
       actual_pcer,
       CASE WHEN $has_tokens THEN reusable_tokens / nullif(prompt_tokens, 0) END AS achievable_pcer,
       CASE WHEN $has_tokens THEN stable_prefix_tokens / nullif(prompt_tokens, 0) END AS stable_prefix_pcer,
       CASE WHEN NOT $has_tokens THEN 'token counts need --tokenizer (a local tokenizer.json)' END AS token_reason,
       broken_pairs, brk.line AS diverge_line, brk.off AS diverge_offset_chars, brk.where_ AS diverge_in,
       brk.ctx AS diverge_context, brk.prev AS diverge_prev, brk.next AS diverge_next
FROM s LEFT JOIN _breaks brk USING (session_id)
ORDER BY broken_pairs DESC, s.session_id;
