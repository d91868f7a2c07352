-- The labels of this audit's calls (schema step 006): each distinct combination of the strings a call
-- shares with many others (its file, format, provider, models, system-token source, price source and date),
-- numbered in a fixed order. `persist` stores them in token_call_labels and each call's numbers in
-- token_call_rows with its label_id, so a million calls do not write a million copies of each string.
-- Calls find their label by label_hash, one integer, not by comparing eight strings per call;
-- engine.py checks that no two labels share a hash (it falls back to comparing the strings if they do).
CREATE OR REPLACE TEMP VIEW _calls_labelled AS
SELECT *, hash({label_columns}) AS label_hash  -- token_call_labels' own columns (store/own_columns.sql)
FROM _calls_priced;
