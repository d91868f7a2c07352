-- The one transaction every figure of an audit is written in (engine.begin_results); store/commit.sql ends it.
BEGIN TRANSACTION;
