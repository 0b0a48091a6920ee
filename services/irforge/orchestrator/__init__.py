"""The orchestrator: evaluation jobs as persisted, resumable steps over the irforge services."""
