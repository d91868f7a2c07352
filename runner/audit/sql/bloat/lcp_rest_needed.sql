-- Pairs whose character search ran past a message's line (bloat/pairs.sql): bloat/lcp_rest.sql finishes them.
SELECT count(*) > 0 FROM _pairs WHERE prev_rid IS NOT NULL AND lcp_chars IS NULL;
