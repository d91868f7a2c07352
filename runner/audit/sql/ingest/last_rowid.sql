-- The last row of _staged so far (-1: none): rows appended later have larger row ids (ingest/lines_of_copy.sql).
SELECT coalesce(max(rowid), -1) FROM _staged;
