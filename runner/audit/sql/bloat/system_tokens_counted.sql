-- System-prompt tokens counted with --tokenizer, for calls whose log gave no explicit count. A call
-- whose logged messages hold no system message has 0 system tokens (known, not missing).
UPDATE _staged SET system_tokens = x.n, system_tokens_source = 'tokenizer'
FROM (
  SELECT c.rid, coalesce(sc.n, 0) AS n
  FROM _content c LEFT JOIN _sys_counts sc ON sc.system_text = c.system_text
) x
WHERE _staged.rowid = x.rid AND _staged.system_tokens IS NULL;
