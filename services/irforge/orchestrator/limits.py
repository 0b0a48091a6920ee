"""The bounds of what a client may ask of the orchestrator. A job's numbers and texts travel in
its proto (shards is an int32), are stored in SQLite and listed to every client: each is checked
where it enters (JobSpec.validate, Orchestrator.list, and `irforge submit | jobs` before sending),
never refused later by protobuf (ValueError) or sqlite3 (OverflowError). Light (no grpc, no
steps): the CLI reads them when it builds its parser."""

from __future__ import annotations

from irforge.orchestrator.errors import RequestError

MAX_SHARDS = 1024                 # shard processes (or Kubernetes pods) of one job's encoding
MAX_TEXT_CHARS = {"name": 200, "output": 4096}   # a job's label; the folder its results are copied to
MAX_LABEL_CHARS = 200             # a suite dataset's label: a folder name in the results
MAX_SUITE_DATASETS = 1000
# Jobs one ListJobs answers at most: a reply of ~1 KB a job stays far below gRPC's 4 MB message cap.
MAX_JOBS_LISTED = 1000


def checked_limit(limit: int) -> int:
    """ListJobs' limit when it is within 0..MAX_JOBS_LISTED (0: the default, 100); RequestError else.
    Checked by the client before protobuf sees it and by the server before SQLite does."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_JOBS_LISTED:
        raise RequestError(f"ListJobs field 'limit': must be within 1..{MAX_JOBS_LISTED} (0 for 100), got {limit!r}")
    return limit


def checked_sequence(after: int) -> int:
    """WatchJob's after_sequence when it is within 0..2**63-1 (an int64, SQLite's INTEGER); RequestError else."""
    if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after < 2**63:
        raise RequestError(f"WatchJob field 'after_sequence': must be within 0..{2**63 - 1}, got {after!r}")
    return after
