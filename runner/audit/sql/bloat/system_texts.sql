-- The distinct system prompts of the logged messages (counted by --tokenizer into _sys_counts), and the
-- table their counts go to.
CREATE OR REPLACE TEMP TABLE _sys_counts (system_text VARCHAR, n BIGINT);
SELECT DISTINCT system_text FROM _content WHERE system_text IS NOT NULL;
