"""The web front door: server-rendered pages (the leaderboard, systems, jobs, report downloads) in
the orchestrator's process, beside its gRPC doors. A top floor like irforge.cli: it resolves who
the browser acts for (a server-side session from a token login, or a trusted proxy header), binds
that Identity for the request, and calls the Orchestrator core and the app/ use cases directly.
Only irforge.cli imports it; it imports neither irforge.cli nor argparse."""
