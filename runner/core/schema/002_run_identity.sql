-- Schema version 2: a run's identity across DB files, and the exact kvreport source that measured it.
--   run_uid          names a run in any DB file (run_id is only its number in one file), so
--                    `kvreport merge` can tell a run it already holds from a new one.
--   kvreport_commit  the git commit of the kvreport checkout that ran it (NULL for an installed wheel).
ALTER TABLE runs ADD COLUMN run_uid VARCHAR;
ALTER TABLE runs ADD COLUMN kvreport_commit VARCHAR;

-- Runs written before version 2 get a uid derived from what identified them then: the same run, the same
-- machine, the same start time. Derived, not random, so migrating two copies of one file agrees.
UPDATE runs SET run_uid = md5(concat_ws('|', 'v1', coalesce(host, ''), coalesce(CAST(started_at AS VARCHAR), ''),
                                        coalesce(model, ''), coalesce(dtype, ''), coalesce(command_line, '')));
