-- Each call's prompt as token ids (with --tokenizer; prompt_bloat.tokenize fills it), by rid.
CREATE OR REPLACE TEMP TABLE _ids (rid BIGINT, ids INTEGER[], n_tokens BIGINT);
