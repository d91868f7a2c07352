-- Prompt bloat per session, where message content was logged.
--   achievable_pcer   = sum over calls of (tokens shared with the previous prompt, from the start) / tokens:
--                       what a perfect prefix cache could have served, prompts as sent
--   stable_prefix_pcer = the same if every call had extended the previous prompt unchanged
--   actual_pcer       = what the provider reported for the same calls
-- The gap actual -> achievable is the provider's caching (block sizes, minimum lengths, cache expiry);
-- achievable -> stable is the prompt layout: something early in the prompt changes between calls (a
-- timestamp at the top of the system prompt is the classic). The earliest such break is reported
-- with a few characters either side so a reader can see what changed.
INSERT INTO token_bloat BY NAME
WITH p AS (
  SELECT pr.*, lc.lcp_chars, lt.lcp_tokens, ic.n_tokens, ip.n_tokens AS prev_n_tokens,
         length(pr.prev_text) AS prev_chars,
         CASE WHEN pr.system_text IS NOT NULL AND lc.lcp_chars
                   < strpos(pr.prompt_text, pr.system_text) + length(pr.system_text) - 1
              THEN 'system prompt' ELSE 'conversation' END AS diverge_in
  FROM _pairs pr
  LEFT JOIN _lcp_chars lc USING (rid)
  LEFT JOIN _lcp_tokens lt USING (rid)
  LEFT JOIN _ids ic ON ic.rid = pr.rid
  LEFT JOIN _ids ip ON ip.rid = pr.prev_rid
),
brk AS (
  SELECT session_id,
         arg_min(struct_pack(line := line, off := lcp_chars, where_ := diverge_in,
                             ctx := right(left(prompt_text, lcp_chars), 40),
                             prev := substr(prev_text, lcp_chars + 1, 40),
                             next := substr(prompt_text, lcp_chars + 1, 40)), lcp_chars) AS b
  FROM p WHERE lcp_chars < prev_chars
  GROUP BY session_id
),
s AS (
  SELECT session_id, count(*) AS n_calls, count(prev_text) AS n_pairs,
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
       broken_pairs, brk.b.line AS diverge_line, brk.b.off AS diverge_offset_chars, brk.b.where_ AS diverge_in,
       brk.b.ctx AS diverge_context, brk.b.prev AS diverge_prev, brk.b.next AS diverge_next
FROM s LEFT JOIN brk USING (session_id)
ORDER BY broken_pairs DESC, s.session_id;
