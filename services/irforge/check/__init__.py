"""`irforge check`: the run/qrels/corpus linter's rules. Each finding has a severity (error,
warning, info), a count and examples a user can open (query id, doc id, file:line)."""

from irforge.check.dataset_scan import DatasetView, open_view
from irforge.check.findings import ERROR, INFO, WARNING, Finding
from irforge.check.report import CheckReport, check, table_lines

__all__ = ["ERROR", "INFO", "WARNING", "CheckReport", "DatasetView", "Finding", "check", "open_view", "table_lines"]
