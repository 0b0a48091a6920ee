"""Where shard workers run: local processes (one machine) or a Kubernetes Indexed Job."""
