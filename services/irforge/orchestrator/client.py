"""An orchestrator client over gRPC with the core's methods, raising the same error types
(JobSpecError, JobNotFound, ResultsNotReady, ServiceUnavailable...)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc

from irforge.common.grpc_errors import ServiceUnavailable, raise_from_rpc
from irforge.common.grpc_server import open_channel
from irforge.common.output_set import EVAL_SET, OutputFolderError, OutputSet
from irforge.accounts import errors as _account_errors  # noqa: F401 - registers Unauthenticated, Forbidden
from irforge.corpus import errors as _corpus_errors  # noqa: F401 - registers the corpus errors a job's steps raise
from irforge.corpus.vectors import base as _vector_errors  # noqa: F401 - registers DimensionMismatch likewise
from irforge.data import errors as _data_errors  # noqa: F401 - registers DataFormatError likewise
from irforge.evaluator import core as _evaluator_errors  # noqa: F401 - registers EvaluationError likewise
from irforge.models import errors as _model_errors  # noqa: F401 - registers ModelNotFound... to rebuild it
from irforge.orchestrator import protocol
from irforge.orchestrator import errors as _errors  # noqa: F401 - registers the types the server raises, to rebuild them
from irforge.orchestrator.limits import checked_limit, checked_sequence
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobEvent, JobRecord
from irforge.v1 import orchestrator_pb2, orchestrator_pb2_grpc



def _rebuild(error: grpc.RpcError, address: str):
    raise_from_rpc(error, address, channel="orchestrator")  # JobSpecError, JobNotFound, ResultsNotReady: registered in orchestrator/errors.py


class OrchestratorClient:
    def __init__(self, address: str, timeout: float = 60.0, token: str | None = None):
        """`token`: the caller's bearer token, for an orchestrator started with --auth tokens."""
        self.address = address
        self.timeout = timeout
        self._channel = open_channel(address, channel="orchestrator", token=token)
        self._stub = orchestrator_pb2_grpc.OrchestratorStub(self._channel)

    def _call(self, method, request):
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as error:
            _rebuild(error, self.address)

    def submit(self, spec: JobSpec) -> str:
        return self._call(self._stub.SubmitJob, spec.to_proto()).job_id

    def get(self, job_id: str) -> JobRecord:
        return protocol.job_from_proto(self._call(self._stub.GetJob, orchestrator_pb2.JobRef(job_id=job_id)))

    def list(self, limit: int = 100) -> list[JobRecord]:
        reply = self._call(self._stub.ListJobs, orchestrator_pb2.ListJobsRequest(limit=checked_limit(limit)))
        return [protocol.job_from_proto(job) for job in reply.jobs]

    def cancel(self, job_id: str) -> JobRecord:
        return protocol.job_from_proto(self._call(self._stub.CancelJob, orchestrator_pb2.JobRef(job_id=job_id)))

    def watch(self, job_id: str, after: int = 0) -> Iterator[JobEvent]:
        """Events until the job ends (no deadline: a job may run for hours; the stream ends with it)."""
        request = orchestrator_pb2.WatchJobRequest(job_id=job_id, after_sequence=checked_sequence(after))
        stream = self._stub.WatchJob(request)
        try:
            for message in stream:
                yield protocol.event_from_proto(message)
        except grpc.RpcError as error:
            _rebuild(error, self.address)
        finally:
            stream.cancel()

    def follow(self, job_id: str, after: int = 0, reconnect_s: float = 300.0,
               on_reconnect: Callable[[ServiceUnavailable], None] | None = None) -> Iterator[JobEvent]:
        """watch() that outlives the orchestrator restarting or the connection dropping: it
        reconnects and resumes after the last event seen (none repeated, none skipped) until the
        job has ended. Raises ServiceUnavailable once nothing has answered for `reconnect_s`
        seconds; `on_reconnect(error)` is told of each lost connection."""
        last, down_since, pause = after, None, 0.5
        answered = False   # reconnecting is for an orchestrator lost mid-watch, not for one never reached
        while True:
            try:
                for event in self.watch(job_id, last):
                    last, down_since, pause, answered = event.sequence, None, 0.5, True
                    yield event
                # A stream also ends cleanly when the orchestrator stops: only the record says
                # whether the job has ended.
                answered = True
                if self.get(job_id).state.ended:
                    return
                raise ServiceUnavailable(f"the orchestrator at {self.address} closed the watch of job {job_id} before it ended")
            except ServiceUnavailable as error:
                if not answered:
                    raise
                down_since = down_since or time.monotonic()
                if time.monotonic() - down_since > reconnect_s:
                    raise ServiceUnavailable(f"{error} (no answer for {reconnect_s:.0f} s; giving up)") from None
                if on_reconnect is not None:
                    on_reconnect(error)
                time.sleep(pause)
                pause = min(pause * 2, 5.0)

    def results(self, job_id: str, out_dir: Path) -> list[Path]:
        """Write the job's results.json and run.trec (and judged layer) into out_dir as one set,
        as `irforge eval --out` does: a broken stream leaves out_dir as it was. A suite job's
        results (suite.json, suite.md, <label>/...) replace out_dir as a whole, as one set too."""
        out_dir = Path(out_dir)
        if out_dir.exists() and not out_dir.is_dir():   # before asking the orchestrator anything
            raise OutputFolderError(f"--out {out_dir}: exists and is not a folder")
        suite = bool(self.get(job_id).spec.get("datasets"))
        if suite:
            _check_suite_folder(out_dir)
        names, handle = [], None
        with OutputSet(out_dir, replaces=None if suite else EVAL_SET) as staging:
            try:
                for chunk in self._stub.GetResults(orchestrator_pb2.JobRef(job_id=job_id), timeout=self.timeout):
                    if handle is None:
                        names.append(_result_name(chunk.name, suite))
                        (staging / names[-1]).parent.mkdir(parents=True, exist_ok=True)
                        handle = open(staging / names[-1], "wb")
                    handle.write(chunk.data)
                    if chunk.last:
                        handle.close()
                        handle = None
            except grpc.RpcError as error:
                _rebuild(error, self.address)
            finally:
                if handle is not None:
                    handle.close()
            if handle is not None or not names:  # a stream cut short must not become OUT
                raise ServiceUnavailable(f"{self.address}: the results stream of job {job_id} ended early")
        return [out_dir / name for name in names]

    def close(self) -> None:
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _result_name(name: str, suite: bool) -> str:
    """Where a streamed file goes in the folder: its name; in a suite's, `<label>/<name>` too, never outside."""
    parts = Path(name).parts
    if not suite or len(parts) > 2 or any(part in ("", ".", "..") for part in parts) or Path(name).is_absolute():
        return Path(name).name
    return str(Path(*parts))


def _check_suite_folder(out_dir: Path) -> None:
    """A suite's results replace the whole folder: only an empty one, or an earlier suite download, may be replaced."""
    if out_dir.exists() and (not out_dir.is_dir() or (any(out_dir.iterdir()) and not (out_dir / "suite.json").exists())):
        raise OutputFolderError(f"--out {out_dir}: a suite job's results replace the whole folder, and it holds other "
                                "files; give an empty or new folder (or an earlier download of a suite)")
