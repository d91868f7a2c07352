-- Sessions as CSV with a header. ingest.py's _csv_records has already split the file into records (with
-- the line each starts on, cells in the order session_id, system_tokens, user_tokens, assistant_tokens,
-- cached_input_tokens, first_seen, last_activity, disconnected_at, model, and whether the record had more
-- fields than the header); here every cell is converted like a JSON value, so one rule set (ingest_sessions)
-- checks the JSONL, CSV and Parquet readers alike. Absent optional columns come out NULL.
INSERT INTO _sess_raw BY NAME
SELECT l AS line, b AS blank, NOT x AND q IS NULL AS ok,
       CASE WHEN q IS NOT NULL THEN q WHEN x THEN 'more fields than the header has columns' END AS note,
       CASE WHEN v[1] IS NULL OR trim(v[1]) = '' THEN NULL ELSE to_json(v[1]) END AS session_id,
       kv_cell(v[2]) AS system_tokens, kv_cell(v[3]) AS user_tokens, kv_cell(v[4]) AS assistant_tokens,
       kv_cell(v[5]) AS cached_input_tokens, kv_cell(v[6]) AS first_seen, kv_cell(v[7]) AS last_activity,
       kv_cell(v[8]) AS disconnected_at,
       CASE WHEN v[9] IS NULL OR trim(v[9]) = '' THEN NULL ELSE to_json(v[9]) END AS model
FROM read_json($records, columns = {'l': 'BIGINT', 'b': 'BOOLEAN', 'v': 'VARCHAR[]', 'x': 'BOOLEAN', 'q': 'VARCHAR'},
               format = 'newline_delimited');
