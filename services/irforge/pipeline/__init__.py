"""Jobs that wire the services together (today `irforge eval`; the orchestrator reuses these steps)."""
