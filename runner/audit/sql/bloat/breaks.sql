-- The earliest prefix break of each session, with a few characters either side (bloat/per_session.sql shows them).
-- Which pair: the smallest lcp_chars, and on a tie the earliest pair. bloat/snippets.sql fills in the text.
CREATE OR REPLACE TEMP TABLE _breaks AS
SELECT session_id, b.rid, b.prev_rid, b.line, b.off, NULL::VARCHAR AS where_, NULL::VARCHAR AS ctx,
       NULL::VARCHAR AS prev, NULL::VARCHAR AS next
FROM (
  SELECT session_id, arg_min({'rid': rid, 'prev_rid': prev_rid, 'line': line, 'off': lcp_chars},
                             {'lcp': lcp_chars, 'pos': pos}) AS b
  FROM _pairs WHERE lcp_chars < prev_chars
  GROUP BY session_id
);
