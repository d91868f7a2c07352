-- Instructions one audit's sessions repeat in the new part of several turns.
SELECT session_id, instruction, n_turns, also_in_system, chars, tokens,
       tokens * (n_turns - 1) AS repeated_tokens
FROM token_repeats
WHERE audit_id = $audit_id
ORDER BY n_turns DESC, chars DESC, session_id, instruction
LIMIT 20;
