-- One prompt's token ids into _ids (without pyarrow: row by row).
INSERT INTO _ids VALUES ($rid, $ids, $n_tokens);
