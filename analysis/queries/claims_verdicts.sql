-- The one verdict rule of the claims ledger, applied to every row of every claim_*.sql (the build puts
-- their union in the temporary table claim_rows first, `ord` keeping their order). A claim query says what
-- its data show (`verdict`), whether the claim is `arithmetic` (formula, unit conversion, tensor sizes:
-- exact on any device) or a `measurement`, and whether the claim's own figure was measured on a GPU or is
-- about GPU memory (`claim_on_gpu`). This file decides what the ledger may call it:
--   * a GPU measurement is confirmed, refuted or "differs by hardware" only by a GPU run (device_kind
--     'cuda'); a run on anything else adds its figure as context, with the verdict $gpu_pending;
--   * everything else keeps the verdict its data give.
-- Verdicts are named parameters ($confirmed, $gpu_pending, ...), bound from analysis/verdicts.py, in every
-- claim query too: the words are defined once.
WITH j AS (
  SELECT c.*, r.device_kind,
         c.basis = 'measurement' AND c.claim_on_gpu AND c.run_id IS NOT NULL
           AND coalesce(r.device_kind, '') <> 'cuda' AS gpu_only
  FROM claim_rows c LEFT JOIN runs r USING (run_id)
)
SELECT claim_id, source, claim, seed_value, seed_hardware, basis, claim_on_gpu, run_id, device_kind, measured_value,
       CASE WHEN gpu_only THEN $gpu_pending ELSE verdict END AS verdict,
       CASE WHEN gpu_only
            THEN format('{} run, its figure is context: only a GPU run can confirm or refute a GPU measurement. {}',
                        CASE WHEN device_kind IS NULL THEN 'Not a GPU' ELSE upper(device_kind) END, reasoning)
            ELSE reasoning END AS reasoning,
       verdict AS data_verdict, query
FROM j
ORDER BY ord;
