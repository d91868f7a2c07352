-- Rows a streaming ingest appended (line still NULL) get their line numbers from their position: the
-- INSERT kept file order (preserve_insertion_order), so line = rowid - first new rowid + 1. This avoids
-- row_number() OVER (), which would force the JSON parsing onto a single thread.
UPDATE _staged SET line = rowid - (SELECT min(rowid) FROM _staged WHERE line IS NULL) + 1
WHERE line IS NULL AND $lines IS NULL;

-- Where the rows are some lines of a file, not all of them (the lines ingest.py reads again, $lines), the
-- number of the line at each position.
UPDATE _staged
SET line = list_extract(CAST($lines AS BIGINT[]), rowid - (SELECT min(rowid) FROM _staged WHERE line IS NULL) + 1)
WHERE line IS NULL AND $lines IS NOT NULL;

-- Calls that named no session (no session_id, user or metadata) are each their own session.
UPDATE _staged SET session_id = kv_no_session($source_name, line)
WHERE source = $source AND session_id IS NULL AND reason IS NULL AND NOT blank;
