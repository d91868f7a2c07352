-- Why one audit's rejected records were rejected: the most common reasons with an example line.
SELECT reason, count(*) AS n, min(source) AS source, min(line) AS first_line
FROM token_rejects
WHERE audit_id = $audit_id
GROUP BY reason
ORDER BY n DESC, reason
LIMIT 20;
