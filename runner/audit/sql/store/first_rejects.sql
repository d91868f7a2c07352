-- The first rejects (by file and line), for the command's output.
SELECT source, line, reason FROM _rejects ORDER BY source, line LIMIT $limit;
