-- Helpers of the prompt-bloat steps (bloat/content.sql, bloat/pairs.sql, bloat/lcp_tokens.sql). Lambda-free, like setup/macros.sql.

-- One step of a binary search for the longest common prefix of a and b: two strings (characters) or two
-- lists (elements), sliced the same way. s = {lo, hi}: the first lo are known equal and the prefix is at
-- most hi long; a step halves hi - lo, and a settled search (lo = hi) passes through untouched. The steps
-- are chained as plain projections (bloat/lcp_text_search.sql, bloat/lcp_tokens.sql), not a recursive CTE:
-- no join, nothing held, so any number of pairs streams through. 32 steps settle any length DuckDB can
-- hold (a string is under 4 GiB).
-- A step tests the prefix up to the midpoint m as: element m equal, then the part not yet known equal
-- (lo + 1 to m - 1). The single elements come first because they are cheap and most often settle it (a
-- difference anywhere before m can only be checked on the slice); the slice then covers only the new part:
-- the first lo are known equal. (Element and one-element slice agree on strings: both count characters.)
CREATE OR REPLACE TEMP MACRO kv_lcp_step(a, b, s) AS
  CASE WHEN s.lo >= s.hi THEN s
       WHEN a[(s.lo + s.hi + 1) // 2] = b[(s.lo + s.hi + 1) // 2]
            AND a[s.lo + 1:(s.lo + s.hi + 1) // 2 - 1] = b[s.lo + 1:(s.lo + s.hi + 1) // 2 - 1]
         THEN {'lo': (s.lo + s.hi + 1) // 2, 'hi': s.hi}
       ELSE {'lo': s.lo, 'hi': (s.lo + s.hi + 1) // 2 - 1} END;

-- The same for two strings, with substr: slicing a string (a[x:y]) costs twice as much. Both count
-- characters, and agree for the positions a step asks for (from 1, a length of 0 or more).
CREATE OR REPLACE TEMP MACRO kv_lcp_step_text(a, b, s) AS
  CASE WHEN s.lo >= s.hi THEN s
       WHEN substr(a, (s.lo + s.hi + 1) // 2, 1) = substr(b, (s.lo + s.hi + 1) // 2, 1)
            AND substr(a, s.lo + 1, (s.lo + s.hi + 1) // 2 - 1 - s.lo) = substr(b, s.lo + 1, (s.lo + s.hi + 1) // 2 - 1 - s.lo)
         THEN {'lo': (s.lo + s.hi + 1) // 2, 'hi': s.hi}
       ELSE {'lo': s.lo, 'hi': (s.lo + s.hi + 1) // 2 - 1} END;

-- The same over two lists in step (a call's roles and texts): the first lo messages agree.
CREATE OR REPLACE TEMP MACRO kv_lcp_step2(a, b, c, d, s) AS
  CASE WHEN s.lo >= s.hi THEN s
       WHEN c[(s.lo + s.hi + 1) // 2] = d[(s.lo + s.hi + 1) // 2] AND a[(s.lo + s.hi + 1) // 2] = b[(s.lo + s.hi + 1) // 2]
            AND c[s.lo + 1:(s.lo + s.hi + 1) // 2 - 1] = d[s.lo + 1:(s.lo + s.hi + 1) // 2 - 1]
            AND a[s.lo + 1:(s.lo + s.hi + 1) // 2 - 1] = b[s.lo + 1:(s.lo + s.hi + 1) // 2 - 1]
         THEN {'lo': (s.lo + s.hi + 1) // 2, 'hi': s.hi}
       ELSE {'lo': s.lo, 'hi': (s.lo + s.hi + 1) // 2 - 1} END;

-- A search not yet started: nothing known equal, at most hi.
CREATE OR REPLACE TEMP MACRO kv_lcp_start(lo, hi) AS {'lo': CAST(lo AS BIGINT), 'hi': CAST(hi AS BIGINT)};

-- A call's prompt as text, from its message rows (role, text, position i): every message as "role: text",
-- joined by newlines, in order. The one definition of prompt_text: lcp_chars, prompt_chars (bloat/content.sql)
-- and the break snippets all measure this string. An aggregate: GROUP BY the call.
-- The lines are collected unordered and put in order by their positions afterwards (an aggregate with its
-- own ORDER BY sorts every group's rows apart, a third of the cost): two list() of one GROUP BY take the
-- rows in the same order, so the positions' order is the lines' order.
CREATE OR REPLACE TEMP MACRO kv_prompt_text(role, text, i) AS
  array_to_string(list_select(list(role || ': ' || text), list_grade_up(list(i))), chr(10));
