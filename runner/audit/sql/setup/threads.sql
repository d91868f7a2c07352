-- A fixed number of threads (Ray tasks run one each, so a node's CPUs are shared by its tasks).
SET threads = $threads;
