-- A line too long to audit (ingest.py replaced it by one byte before reading): a reject with its size.
UPDATE _staged SET reason = $reason, blank = false WHERE source = $source AND line = $line;
