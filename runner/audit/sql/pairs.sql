-- Consecutive calls of a session that both logged their messages: (previous prompt, this prompt).
CREATE OR REPLACE TEMP TABLE _pairs AS
SELECT c.rid, c.session_id, c.source, c.line, c.prompt_text, c.system_text, c.prompt_chars,
       lag(c.rid) OVER w AS prev_rid, lag(c.prompt_text) OVER w AS prev_text,
       c.input_tokens, c.cached_input_tokens
FROM _content c
WINDOW w AS (PARTITION BY c.session_id ORDER BY c.t, c.source, c.line, c.rid);
