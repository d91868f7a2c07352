-- The fast shape reader's rows whose line it may not have read as the line-exact reader does: a NULL record
-- ('malformed JSON': not JSON, a value of another type than the record's), and every row without usage (or,
-- LiteLLM, without call_type and prompt_tokens), which
-- is where a line that is no object lands (DuckDB's JSON reader makes a record of all NULLs of '[1, 2]' or '"x"',
-- as of '{}'). They are read again line-exactly (fastread.py), which says what each is.
UPDATE _staged SET need_raw = true
WHERE source = $source
  AND reason IN ('malformed JSON', 'response has no usage', 'message has no usage',
                 'not a LiteLLM log line (no call_type, no prompt_tokens)');
