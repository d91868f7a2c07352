-- The audit's most repeated instructions: the first $max_rows of every share's (bloat/repeat_parts.sql).
INSERT INTO token_repeats BY NAME
SELECT $audit_id AS audit_id, $run_id AS run_id, session_id, instruction, n_turns, also_in_system, chars,
       NULL AS tokens
FROM _repeat_parts
ORDER BY n_turns DESC, chars DESC, session_id, instruction
LIMIT $max_rows;
