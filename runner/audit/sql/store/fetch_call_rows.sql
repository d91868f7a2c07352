-- This audit's calls in file order (a big audit writes them in any order, each with its line).
SELECT r.* FROM token_call_rows r JOIN token_call_labels l USING (audit_id, label_id)
WHERE r.audit_id = $audit_id ORDER BY l.source, r.line;
