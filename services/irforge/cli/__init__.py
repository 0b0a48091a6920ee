"""The `irforge` command line."""
