"""Quality control: `irforge qc` (and the Python API) from a QcConfig through the QC builder
(irforge.builder.qc) to the summary qc_summary.json holds. Options are refused (UsageError)
before any model loads; OUT is written whole or not at all (irforge.judge.qc.writer)."""

from __future__ import annotations

from contextlib import ExitStack

from irforge.app.errors import UsageError
from irforge.builder.qc import qc_job
from irforge.config.qc import QcConfig


def run_qc(config: QcConfig) -> dict:
    """Check `config`, run quality control, return its summary. UsageError for an option that
    cannot run (nothing written); ValueError for an input refused while running (an OUT refused,
    a contradictory hard negatives file)."""
    with ExitStack() as stack:
        try:
            job = qc_job(config, stack)
        except UsageError:
            raise
        except ValueError as error:
            raise UsageError(str(error)) from None
        return job.run()


__all__ = ["run_qc"]
