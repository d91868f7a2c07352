-- Prompt bloat of one audit: sessions whose prefix breaks between calls first, then the widest gaps
-- between the PCER the provider gave and the PCER a prefix cache could reach.
SELECT session_id, n_calls, n_pairs, prompt_tokens, reusable_tokens, stable_prefix_tokens, actual_pcer,
       achievable_pcer, stable_prefix_pcer, achievable_pcer - actual_pcer AS gap, token_reason, broken_pairs,
       diverge_line, diverge_offset_chars, diverge_in, diverge_context, diverge_prev, diverge_next
FROM token_bloat
WHERE audit_id = $audit_id
ORDER BY broken_pairs DESC, (achievable_pcer - actual_pcer) DESC NULLS LAST, session_id
LIMIT 20;
