-- Sessions as CSV with a header. The reader declares every column as text (ingest.py names them from
-- the header, unknown ones as c<N>) plus one overflow column, so a row with too many fields is rejected,
-- not silently cut. Optional columns the file lacks come out NULL through to_json(row).
INSERT INTO _sess_raw
WITH rows AS (
  SELECT row_number() OVER () + 1 AS line, to_json(t) AS j
  FROM read_csv($path, columns = $columns, header = true, auto_detect = false, delim = ',', quote = '"',
                escape = '"', null_padding = true, strict_mode = false, max_line_size = $max_line_size) t
),
v AS (
  SELECT line, json_extract_string(j, ['$.session_id', '$.system_tokens', '$.user_tokens', '$.assistant_tokens',
         '$.cached_input_tokens', '$.first_seen', '$.last_activity', '$.disconnected_at', '$.model',
         '$._overflow']) AS v
  FROM rows
)
SELECT line, v[10] IS NULL,
       CASE WHEN v[10] IS NOT NULL THEN 'more fields than the header has columns' END,
       CASE WHEN v[1] IS NULL OR trim(v[1]) = '' THEN NULL ELSE to_json(v[1]) END,
       kv_cell(v[2]), kv_cell(v[3]), kv_cell(v[4]), kv_cell(v[5]), kv_cell(v[6]), kv_cell(v[7]), kv_cell(v[8]),
       CASE WHEN v[9] IS NULL OR trim(v[9]) = '' THEN NULL ELSE to_json(v[9]) END
FROM v;
