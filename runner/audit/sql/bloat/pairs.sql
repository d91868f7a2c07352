-- Consecutive calls of a session that both logged their messages, and lcp_chars: the longest common
-- prefix, in characters, of this call's prompt_text with the previous call's (bloat/content.sql).
--
-- Most prompts re-send the previous one message by message, so the prefix is found per message first:
-- how many leading messages the two prompts share (role and text equal), by a binary search over the
-- message lists. When every message they have in common agrees, one prompt text is a prefix of the
-- other and lcp_chars is the shorter length. Otherwise message k is the first that differs; the texts
-- agree up to where it starts (off) and the rest is the character-level search within message k's line
-- ("role: text" plus the newline that follows it, if another message does). That search ends inside both
-- lines except when one line is a prefix of the other: if that line ends its prompt, the prompt is the
-- shorter one; if not (it ends with its newline and the other line goes on with one, e.g. a message
-- extended by a new line), the search continues over the whole texts (second statement).
-- The searches are chains of projections (bloat/macros.sql), so nothing here is held but the window's
-- sort, which spills like any other.
CREATE OR REPLACE TEMP TABLE _pairs AS
WITH w AS (
  SELECT rid, session_id, source, line, t, prompt_chars, input_tokens, cached_input_tokens, roles, texts,
         row_number() OVER w AS pos,
         lag(rid) OVER w AS prev_rid, lag(prompt_chars) OVER w AS prev_chars,
         lag(roles) OVER w AS prev_roles, lag(texts) OVER w AS prev_texts
  FROM _content
  WINDOW w AS (PARTITION BY session_id ORDER BY t, source, line, rid)
),
m0 AS (
  SELECT *, least(len(roles), len(prev_roles)) AS n,
         -- the last message they have in common first: a prompt that differs early mostly differs there too,
         -- and then no message list is sliced. Otherwise the first message (the system prompt) settles the
         -- search when it differs, and starts it one message in when not.
         CASE WHEN prev_rid IS NULL THEN kv_lcp_start(0, 0)
              WHEN texts[least(len(roles), len(prev_roles))] = prev_texts[least(len(roles), len(prev_roles))]
               AND roles[least(len(roles), len(prev_roles))] = prev_roles[least(len(roles), len(prev_roles))]
               AND texts[1:least(len(roles), len(prev_roles))] = prev_texts[1:least(len(roles), len(prev_roles))]
               AND roles[1:least(len(roles), len(prev_roles))] = prev_roles[1:least(len(roles), len(prev_roles))]
                THEN kv_lcp_start(least(len(roles), len(prev_roles)), least(len(roles), len(prev_roles)))
              WHEN texts[1] = prev_texts[1] AND roles[1] = prev_roles[1]
                THEN kv_lcp_start(1, least(len(roles), len(prev_roles)) - 1)
              ELSE kv_lcp_start(0, 0) END AS s
  FROM w
),
m1 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m0),
m2 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m1),
m3 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m2),
m4 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m3),
m5 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m4),
m6 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m5),
m7 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m6),
m8 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m7),
m9 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m8),
m10 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m9),
m11 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m10),
m12 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m11),
m13 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m12),
m14 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m13),
m15 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m14),
m16 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m15),
m17 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m16),
m18 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m17),
m19 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m18),
m20 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m19),
m21 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m20),
m22 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m21),
m23 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m22),
m24 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m23),
m25 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m24),
m26 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m25),
m27 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m26),
m28 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m27),
m29 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m28),
m30 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m29),
m31 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m30),
m32 AS (SELECT * REPLACE (kv_lcp_step2(roles, prev_roles, texts, prev_texts, s) AS s) FROM m31),
k AS (
  SELECT * EXCLUDE (s), s.lo + 1 AS k, prev_rid IS NOT NULL AND s.lo < n AS differs FROM m32
),
ts0 AS (
  -- lines of the same role agree at least over "role: "
  SELECT *, kv_lcp_start(CASE WHEN differs AND roles[k] = prev_roles[k] THEN length(roles[k]) + 2 ELSE 0 END,
                         coalesce(least(length(a), length(b)), 0)) AS s
  FROM (
    SELECT *,
           CASE WHEN differs THEN prev_roles[k] || ': ' || prev_texts[k] || CASE WHEN k < len(prev_roles) THEN chr(10) ELSE '' END END AS a,
           CASE WHEN differs THEN roles[k] || ': ' || texts[k] || CASE WHEN k < len(roles) THEN chr(10) ELSE '' END END AS b,
           -- where message k's line starts (only a differing pair uses it); a prompt most often breaks in its
           -- first message (the system prompt) or right after it, where no list needs slicing and joining
           CASE WHEN NOT differs THEN NULL
                WHEN k = 1 THEN 0
                WHEN k = 2 THEN length(roles[1]) + length(texts[1]) + 3
                ELSE length(array_to_string(roles[1:k - 1], '')) + length(array_to_string(texts[1:k - 1], '')) + 3 * (k - 1)
           END AS off
    FROM k
  )
),
{include:bloat/lcp_text_search},
-- what the later steps read (bloat_breaks, bloat, lcp_tokens, bloat_lcp_rest): t and source only order the window
SELECT rid, session_id, line, pos, prompt_chars, input_tokens, cached_input_tokens, prev_rid, prev_chars,
       CASE WHEN prev_rid IS NULL THEN NULL
            WHEN NOT differs THEN least(prompt_chars, prev_chars)
            WHEN s.lo < least(length(a), length(b))
              OR (s.lo = length(b) AND k = len(roles)) OR (s.lo = length(a) AND k = len(prev_roles))
              THEN off + s.lo
       END AS lcp_chars,
       CASE WHEN differs THEN off + s.lo END AS lcp_known
FROM ts32;
