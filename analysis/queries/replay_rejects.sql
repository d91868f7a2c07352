-- One replay's rejected lines, in file and line order (the first 100; the CLI printed the count).
SELECT file, line, field, reason
FROM replay_rejects
WHERE replay_id = $replay_id
ORDER BY file, line
LIMIT 100;
