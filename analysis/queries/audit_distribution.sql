-- How per-session PCER and SPOR spread over one audit's sessions, in ten 10-point bins (100% falls in
-- the last). Sessions without a SPOR (no system-token count) are counted separately.
WITH bins AS (
  SELECT range AS bin FROM range(0, 10)
),
s AS (
  SELECT least(9, floor(pcer * 10))::INTEGER AS pcer_bin, least(9, floor(spor * 10))::INTEGER AS spor_bin
  FROM token_audit WHERE audit_id = $audit_id
)
SELECT b.bin, format('{}–{}%', 10 * b.bin, 10 * b.bin + 10) AS label,
       (SELECT count(*) FROM s WHERE pcer_bin = b.bin) AS pcer_sessions,
       (SELECT count(*) FROM s WHERE spor_bin = b.bin) AS spor_sessions,
       (SELECT count(*) FROM s WHERE spor_bin IS NULL) AS no_spor_sessions
FROM bins b
ORDER BY b.bin;
