"""`irforge bench`: one system over a suite of datasets (suite file, runner, reuse check, table)."""
