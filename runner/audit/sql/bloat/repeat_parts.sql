-- Instructions a session sends again in the NEW part of several turns (the latest user message), as
-- sentences of at least $min_chars characters; also_in_system marks ones the system prompt already says.
-- One table per share of the sessions (all of them in one process; one partition in
-- runner/audit/distributed.py).
CREATE OR REPLACE TEMP TABLE _repeat_parts AS
WITH s AS (
  SELECT session_id, rid, system_text,
         -- a text with none of . ! ? and no newline has nothing to split at (it is its one sentence): the
         -- regexp runs only on the others
         trim(unnest(CASE WHEN contains(last_user_text, '.') OR contains(last_user_text, '!')
                            OR contains(last_user_text, '?') OR contains(last_user_text, chr(10))
                          THEN regexp_split_to_array(last_user_text, '[.!?](\s+|$)|\n+')
                          ELSE [last_user_text] END)) AS sentence
  FROM _content WHERE length(last_user_text) >= $min_chars  -- a sentence is a part of the text: no shorter text has one
),
f AS (
  SELECT *, hash(session_id, lower(sentence)) AS h FROM s WHERE length(sentence) >= $min_chars
),
-- Most sentences are sent once: a group of one row cannot make 2 turns. Different hashes are certainly
-- different groups, so a hash seen once marks such a sentence and the string grouping below sees only the
-- rest (equal hashes are only a candidate: the grouping compares the strings).
m AS (SELECT h FROM f GROUP BY h HAVING count(*) >= 2),
g AS (
  SELECT session_id, min(sentence) AS instruction, count(DISTINCT rid) AS n_turns,
         coalesce(bool_or(contains(lower(system_text), lower(sentence))), false) AS also_in_system
  FROM f WHERE h IN (SELECT h FROM m) GROUP BY session_id, lower(sentence)
  HAVING count(DISTINCT rid) >= 2
)
-- The first $max_rows of these sessions (bloat/repeats.sql keeps the first of all shares': the order is total, as
-- no two groups of a session share an instruction, so the first of the whole audit are among them).
SELECT session_id, instruction, n_turns, also_in_system, length(instruction) AS chars
FROM g
ORDER BY n_turns DESC, chars DESC, session_id, instruction
LIMIT $max_rows;
