-- How far the statement now running is (con.query_progress) for the progress bar: DuckDB tracks it only when
-- asked to, and must not draw its own bar.
SET enable_progress_bar = true;
SET enable_progress_bar_print = false;
