-- Rows in _staged so far (the progress display's lines per file).
SELECT count(*) FROM _staged;
