-- How many labels the audit's calls have, and how many distinct label hashes (equal: calls find their label
-- by hash; one label: nothing to look up).
SELECT count(*) AS labels, count(DISTINCT label_hash) AS hashes FROM _call_labels;
