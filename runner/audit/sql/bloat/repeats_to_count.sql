-- This audit's repeated instructions, for --tokenizer to count.
SELECT rowid, instruction FROM token_repeats WHERE audit_id = $audit_id;
