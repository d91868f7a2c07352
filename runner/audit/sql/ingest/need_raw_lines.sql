-- The fast reader's rows of one file whose result needs the raw line (ingest/openai_calls.sql need_raw), by line.
SELECT line FROM _staged WHERE source = $source AND need_raw ORDER BY line;
