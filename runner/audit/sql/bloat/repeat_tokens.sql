-- One repeated instruction's token count (--tokenizer).
UPDATE token_repeats SET tokens = $tokens WHERE rowid = $row;
