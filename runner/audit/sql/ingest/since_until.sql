-- --since / --until: calls outside [since, until) are skipped (counted with the blank lines, neither calls
-- nor rejects), and so are calls with no time at all, which no window can place. Rejects stay: a broken
-- line has no time to judge it by, and the file still holds it.
UPDATE _staged SET blank = true
WHERE reason IS NULL AND NOT blank
  AND (coalesce(start_time, end_time) IS NULL
       OR coalesce(start_time, end_time) < coalesce(CAST($since AS TIMESTAMP), '-infinity'::TIMESTAMP)
       OR coalesce(start_time, end_time) >= coalesce(CAST($until AS TIMESTAMP), 'infinity'::TIMESTAMP));
