-- What a time task samples: its partition's segments (the reduce's _seg) and the whole audit's time span, as
-- metrics/seg_window.sql makes it in one process (the driver took it from every reduce's _seg_window_parts).
CREATE TEMP TABLE _seg AS SELECT * FROM read_parquet($seg);

CREATE TEMP TABLE _seg_window AS
SELECT CAST($t0 AS DOUBLE) AS t0, CAST($t1 AS DOUBLE) AS t1, CAST($n AS HUGEINT) AS n,
       CAST($active_session_s AS DOUBLE) AS active_session_s;
