-- Those rows go: the line-exact reader reads their lines again (ingest.py _fast_path).
DELETE FROM _staged WHERE source = $source AND need_raw;
