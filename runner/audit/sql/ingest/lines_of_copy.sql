-- The rows just read from a copy of some lines of a file (fastread.py: those after row $after_rowid, numbered 1..k
-- by the copy's own order) get the numbers of those lines in the file ($lines).
UPDATE _staged SET line = list_extract(CAST($lines AS BIGINT[]), line)
WHERE source = $source AND rowid > $after_rowid;
