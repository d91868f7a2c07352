-- The whole audit's time span (metrics/seg_window.sql), for the time tasks.
SELECT t0, t1, n, active_session_s FROM _seg_window;
