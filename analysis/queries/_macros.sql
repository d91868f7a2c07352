-- Formatting helpers every named query may use (created on the connection before the first query runs).
-- sig3(x): a number as a reader wants it in a sentence, about three significant digits and never an
-- exponent: 339 · 52.5 · 7.82 · 0.0123 (format's {:.3g} would write 1.23e+03).
CREATE OR REPLACE TEMP MACRO sig3(x) AS
  CASE WHEN x IS NULL THEN '–'
       WHEN abs(x) >= 100 THEN format('{:,.0f}', x)
       WHEN abs(x) >= 10 THEN format('{:.1f}', x)
       WHEN abs(x) >= 1 THEN format('{:.2f}', x)
       ELSE format('{:.3g}', x) END;
