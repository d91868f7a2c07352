-- One system prompt's token count (--tokenizer).
INSERT INTO _sys_counts VALUES ($system_text, $n);
