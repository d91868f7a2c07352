-- The ledger rows every claim_*.sql ends with, included as its last CTE (`{include:` this file `}`): the rows of
-- its `claims` (what its data show: claim_id, run_id, measured_value, verdict, reasoning, and any column of its
-- own such as ord) and a $not_measured row for each row of its `unmeasured` (claim_id, reasoning, and the same
-- own columns: a claim its data cannot judge), each with its words from `text` (claim_id, claim, seed_value).
-- `measured` tells the two apart.
ledger AS (
  SELECT * FROM (SELECT *, true AS measured FROM claims
                 UNION ALL BY NAME
                 SELECT *, $not_measured AS verdict, false AS measured FROM unmeasured)
  JOIN text USING (claim_id)
)
