"""Hostile files and full disks (issue 24).

Inputs that are not regular files (a FIFO, /dev/zero, a folder) are refused naming the path and
which input it was given as, instead of "file not found" (or a read that never ends).

A full disk is a real one: a 1 MiB tmpfs mounted for each test (we are root here, as on CI), filled
to the last page. `eval`, `report`, `compare --out` and a BM25 index write then end with one line,
"no space left on device while writing PATH", exit status 74 (cli/main.py: DISK_FULL_EXIT), no
traceback, nothing half-written and no temporary left on the disk, and the previous output intact.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import numpy as np
import pytest

from irforge.cli.main import DISK_FULL_EXIT, main
from irforge.common.files import NoSpaceLeft, write_json_atomic
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.settings import Bm25Settings
from irforge.data.types import Document, Query

from .bad_inputs import GOOD_BEIR, GOOD_TREC

# -- inputs that are not regular files -------------------------------------------------------------


def write_files(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def special(kind: str, path: Path) -> Path:
    """Put a FIFO, a link to /dev/zero or a folder at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    return path


WHAT = {"fifo": "a FIFO (named pipe)", "dev-zero": "a character device", "folder": "a directory"}


def metrics_case(tmp_path: Path, kind: str, which: str) -> tuple[list[str], str]:
    files = write_files(tmp_path, GOOD_TREC)
    bad = special(kind, files / f"{which}.txt")
    return ["metrics", str(files / "qrels.txt"), str(files / "run.txt")], f"{bad}: the {which} file is {WHAT[kind]}"


def dataset_case(tmp_path: Path, kind: str, name: str) -> tuple[list[str], str]:
    dataset = write_files(tmp_path / "ds", GOOD_BEIR)
    bad = special(kind, dataset / name)
    what = {"corpus.jsonl": "corpus.jsonl", "queries.jsonl": "queries.jsonl", "qrels/test.tsv": "test qrels"}[name]
    argv = ["eval", "--dataset", str(dataset), "--out", str(tmp_path / "out"), "--index-dir", str(tmp_path / "idx")]
    return argv, f"{bad}: the dataset's {what} is {WHAT[kind]}, not a regular file"


def config_case(tmp_path: Path, kind: str) -> tuple[list[str], str]:
    dataset = write_files(tmp_path / "ds", GOOD_BEIR)
    bad = special(kind, tmp_path / "config.yaml")
    argv = ["eval", "--dataset", str(dataset), "--out", str(tmp_path / "out"), "--config", str(bad)]
    return argv, f"configuration {bad} is {WHAT[kind]}, not a regular file"


def report_case(tmp_path: Path, kind: str) -> tuple[list[str], str]:
    bad = special(kind, tmp_path / "results.json")
    return ["report", str(bad), "--out", str(tmp_path / "out")], f"{bad}: the report input is {WHAT[kind]}"


def compare_case(tmp_path: Path, kind: str) -> tuple[list[str], str]:
    bad = special(kind, tmp_path / "results.json")
    return ["compare", str(bad), str(bad), "--out", str(tmp_path / "out")], f"{bad}: the results.json given is {WHAT[kind]}"


def spec_file_case(tmp_path: Path, kind: str, command: str, flag: str, what: str) -> tuple[list[str], str]:
    # Read before anything else happens (no orchestrator, no dataset needed): the one YAML reader.
    bad = special(kind, tmp_path / "spec.yaml")
    extra = ["--out", str(tmp_path / "out")] if command == "bench" else []
    return [command, flag, str(bad), *extra], f"{what} {bad} is {WHAT[kind]}, not a regular file"


def eval_spec_case(tmp_path: Path, kind: str, flags: list[str], what: str) -> tuple[list[str], str]:
    # A judge or endpoint spec: "not found" sent users looking for a file that is there.
    dataset = write_files(tmp_path / "ds", GOOD_BEIR)
    bad = special(kind, tmp_path / "spec.yaml")
    argv = ["eval", "--dataset", str(dataset), "--out", str(tmp_path / "out"), "--index-dir", str(tmp_path / "idx"),
            *flags, str(bad)]
    return argv, f"{what} {bad} is {WHAT[kind]}, not a regular file"


NOT_REGULAR = {
    "metrics-qrels": lambda tmp, kind: metrics_case(tmp, kind, "qrels"),
    "metrics-run": lambda tmp, kind: metrics_case(tmp, kind, "run"),
    "eval-corpus": lambda tmp, kind: dataset_case(tmp, kind, "corpus.jsonl"),
    "eval-queries": lambda tmp, kind: dataset_case(tmp, kind, "queries.jsonl"),
    "eval-qrels": lambda tmp, kind: dataset_case(tmp, kind, "qrels/test.tsv"),
    "eval-config": config_case,
    "report-input": report_case,
    "compare-results": compare_case,
    "bench-suite": lambda tmp, kind: spec_file_case(tmp, kind, "bench", "--suite", "suite file"),
    "submit-spec": lambda tmp, kind: spec_file_case(tmp, kind, "submit", "--spec", "job spec"),
    "submit-suite": lambda tmp, kind: spec_file_case(tmp, kind, "submit", "--suite", "suite file"),
    "eval-judge-spec": lambda tmp, kind: eval_spec_case(tmp, kind, ["--fill-holes", "10", "--judge"], "judge spec"),
    "eval-endpoint-spec": lambda tmp, kind: eval_spec_case(tmp, kind, ["--endpoint"], "endpoint spec"),
}


@pytest.fixture
def no_hang():
    """A FIFO opened for reading blocks until a writer comes, and /dev/zero read whole takes all the
    memory there is: a regression fails here (an alarm, a MemoryError past 2 GiB more address
    space) rather than hanging the suite or calling in the OOM killer."""
    import resource
    import signal

    def expired(signum, frame):
        raise AssertionError("the command blocked reading its input (a FIFO?)")

    in_use = next(int(line.split()[1]) * 1024 for line in Path("/proc/self/status").read_text().splitlines()
                  if line.startswith("VmSize:"))
    limits = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (in_use + 2 * 2**30, limits[1]))
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, limits)


# A folder is a valid input of report and compare (a results folder): not a case for them.
NOT_REGULAR_CASES = [(case, kind) for case in NOT_REGULAR for kind in WHAT
                     if not (kind == "folder" and case in ("report-input", "compare-results"))]


@pytest.mark.parametrize(("case", "kind"), NOT_REGULAR_CASES, ids=[f"{case}-{kind}" for case, kind in NOT_REGULAR_CASES])
def test_an_input_that_is_not_a_regular_file_is_named_as_such(case, kind, tmp_path, capsys, no_hang):
    argv, message = NOT_REGULAR[case](tmp_path, kind)
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "not found" not in err, err
    assert f"irforge {argv[0]}: error: {message}" in err, err
    assert code == 2
    assert not (tmp_path / "out").exists()


# -- a full disk: a real, tiny filesystem ----------------------------------------------------------

class FullDisk:
    """A 1 MiB tmpfs whose every free page is taken by one filler file (`fill()`, done at once);
    `free(n)` gives n bytes back."""

    def __init__(self, root: Path):
        self.root = root
        self.filler = root / "filler"
        self.fill()

    def fill(self) -> None:
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while True:
                os.write(fd, b"\1" * 4096)
        except OSError as error:
            assert error.errno == errno.ENOSPC
        finally:
            os.close(fd)

    def free(self, size: int) -> None:
        os.truncate(self.filler, max(0, self.filler.stat().st_size - size))

    def entries(self) -> list[str]:
        """Everything on the disk but the filler, hidden temporaries included."""
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*") if p != self.filler)


def mount_problem() -> str | None:
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root (CI runs as root); not root here"
    if shutil.which("mount") is None:
        return "no mount command on this machine"
    return None


@pytest.fixture
def full_disk(tmp_path):
    problem = mount_problem()
    if problem:
        pytest.skip(problem)
    root = tmp_path / "small-disk"
    root.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(root)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): in a container without CAP_SYS_ADMIN?")
    try:
        yield FullDisk(root)
    finally:
        subprocess.run(["umount", "-l", str(root)], check=True)


@pytest.fixture(scope="module")
def results_folders(tmp_path_factory) -> tuple[Path, Path]:
    """Two small BEIR results folders on the ordinary disk, to report on and compare."""
    root = tmp_path_factory.mktemp("results")
    dataset = write_files(root / "ds", GOOD_BEIR)
    folders = []
    for k1 in ("0.9", "1.2"):
        out = root / f"k1-{k1}"
        assert main(["eval", "--dataset", str(dataset), "--out", str(out), "--index-dir", str(root / "idx"),
                     "--k1", k1]) == 0
        folders.append(out)
    return folders[0], folders[1]


def assert_disk_full(code: int, err: str, command: str, written: Path) -> None:
    assert "Traceback" not in err, err
    assert f"irforge {command}: error: no space left on device while writing {written}" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert code == DISK_FULL_EXIT


def test_a_full_disk_under_an_atomic_write_leaves_no_temporary(full_disk):
    # Old: close() flushed into the full disk, raised, and the temporary stayed.
    with pytest.raises(NoSpaceLeft, match=f"while writing {full_disk.root / 'x.json'}$"):
        write_json_atomic(full_disk.root / "x.json", {"data": "x" * 20000})
    assert full_disk.entries() == []


def test_eval_on_a_full_disk_keeps_the_previous_results(full_disk, tmp_path, capsys):
    dataset = write_files(tmp_path / "ds", GOOD_BEIR)
    out = full_disk.root / "out"
    argv = ["eval", "--dataset", str(dataset), "--out", str(out), "--index-dir", str(tmp_path / "idx")]
    full_disk.free(64 * 1024)
    assert main([*argv, "--k1", "0.9"]) == 0
    before = {name: (out / name).read_bytes() for name in ("results.json", "run.trec")}
    full_disk.fill()   # and now the disk is full
    assert full_disk.entries() == ["out", "out/results.json", "out/run.trec"]
    capsys.readouterr()
    code = main([*argv, "--k1", "1.2"])
    assert_disk_full(code, capsys.readouterr().err, "eval", out)
    assert {name: (out / name).read_bytes() for name in before} == before
    assert full_disk.entries() == ["out", "out/results.json", "out/run.trec"]   # no staging folder, no temporary


def test_report_on_a_full_disk(full_disk, results_folders, capsys):
    out = full_disk.root / "report.html"
    code = main(["report", str(results_folders[0]), "--out", str(out)])
    assert_disk_full(code, capsys.readouterr().err, "report", out)
    assert full_disk.entries() == []


def test_compare_out_on_a_full_disk(full_disk, results_folders, capsys):
    out = full_disk.root / "comparison"
    code = main(["compare", *map(str, results_folders), "--out", str(out)])
    assert_disk_full(code, capsys.readouterr().err, "compare", out)
    assert full_disk.entries() == []


def test_a_bm25_index_write_on_a_full_disk_leaves_no_half_generation(full_disk, tmp_path, capsys):
    dataset = write_files(tmp_path / "ds", GOOD_BEIR)
    indexes = full_disk.root / "idx"
    full_disk.free(8192)   # meta.json and the lock fit; the generation's files do not
    argv = ["eval", "--dataset", str(dataset), "--out", str(tmp_path / "out"), "--index-dir", str(indexes)]
    code = main(argv)
    err = capsys.readouterr().err
    assert_disk_full(code, err, "eval", indexes)
    corpus = next(indexes.iterdir())
    assert sorted(p.name for p in corpus.iterdir()) == ["meta.json", "writer.lock"], full_disk.entries()
    assert json.loads((corpus / "meta.json").read_text())["generation"] is None
    assert not (tmp_path / "out").exists()
    full_disk.free(10**6)   # space freed: the same command now indexes and evaluates
    assert main(argv) == 0
    assert (tmp_path / "out" / "results.json").is_file()


def test_a_second_bm25_generation_on_a_full_disk_keeps_the_first_in_service(full_disk):
    backend = EmbeddedBackend(full_disk.root / "idx")
    full_disk.free(10**6)
    backend.create("c", "fp", Bm25Settings())
    list(backend.ingest("c", iter([[Document("a", "", "aspirin heart"), Document("b", "", "vitamin bone")]])))
    full_disk.fill()
    more = [Document(f"d{i}", "", f"zebrafish word{i} " * 50) for i in range(200)]
    with pytest.raises(NoSpaceLeft, match="while writing .*/idx/c"):
        list(backend.ingest("c", iter([more])))
    assert sorted(p.name for p in (full_disk.root / "idx" / "c").iterdir()) == ["g000001", "meta.json", "writer.lock"]
    assert EmbeddedBackend(full_disk.root / "idx").search("c", [Query("q", "aspirin")], 10)[0].doc_ids.tolist() == ["a"]


def test_the_embedding_cache_on_a_full_disk(full_disk):
    from irforge.models.cache import EmbeddingCache, text_hash

    full_disk.free(10**6)
    cache = EmbeddingCache(full_disk.root / "embeddings.sqlite3")
    full_disk.fill()
    hashes = [text_hash(f"text {i}") for i in range(2000)]
    with pytest.raises(NoSpaceLeft, match=f"while writing {full_disk.root / 'embeddings.sqlite3'}$"):
        cache.put_many("encoder", "passage", hashes, np.ones((2000, 384), dtype=np.float32))
    assert cache.count() == 0   # the transaction was rolled back: no vector half-stored
    cache.close()


VECTOR_STORE_ON_A_FULL_DISK = """
import sys
import typing
import numpy as np
from irforge.common.files import NoSpaceLeft
from irforge.corpus.vectors.edge import EdgeVectorBackend
try:
    EdgeVectorBackend(sys.argv[1]).create("c", 64, "cosine", "fp")
except NoSpaceLeft as error:
    print(error)
    raise SystemExit(74)
"""


def test_the_vector_store_on_a_full_disk_is_refused_before_qdrant_edge_writes(full_disk):
    # Qdrant Edge writes through memory-mapped files: on a full disk the process died of SIGBUS.
    # Its own interpreter, so a regression kills that one, not the test session.
    vectors = full_disk.root / "vectors"
    done = subprocess.run([sys.executable, "-c", VECTOR_STORE_ON_A_FULL_DISK, str(vectors)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 74, (done.returncode, done.stderr[-2000:])
    assert done.stdout.startswith(f"no space left on device while writing {vectors / 'c'} (Qdrant Edge needs about 8 MiB")
    assert full_disk.entries() in ([], ["vectors"])


def test_a_corpus_service_on_a_full_disk_tells_the_client_which_folder(full_disk, tmp_path, capsys):
    # The error travels over gRPC as RESOURCE_EXHAUSTED and is rebuilt as the same error: the
    # client's message and exit status are the in-process ones.
    from irforge.common.grpc_server import start_server
    from irforge.corpus import server as corpus_server
    from irforge.corpus.core import CorpusService

    indexes = full_disk.root / "idx"
    running = start_server([corpus_server.binding(CorpusService(EmbeddedBackend(indexes)))], port=0)
    try:
        full_disk.free(8192)
        dataset = write_files(tmp_path / "ds", GOOD_BEIR)
        code = main(["eval", "--dataset", str(dataset), "--out", str(tmp_path / "out"),
                     "--corpus-server", f"127.0.0.1:{running.port}"])
    finally:
        running.stop(grace=0)
    assert_disk_full(code, capsys.readouterr().err, "eval", indexes)
    assert not (tmp_path / "out").exists()


# -- endpoint options without --endpoint -----------------------------------------------------------

def endpoint_overrides() -> list[tuple[str, str]]:
    """(flag, a valid value) for every --endpoint-* override the pipeline declares: a new one is
    covered without a new row."""
    from irforge.config.options import leaves
    from irforge.config.pipeline import PipelineConfig

    values = {int: "8", str: "http://127.0.0.1:9/v1"}
    found = []
    for leaf in leaves(PipelineConfig):
        if leaf.path[0] == "endpoint" and leaf.path[-1] != "spec":
            kind = next(t for t in (int, str) if t in typing.get_args(leaf.type) or leaf.type is t)
            found.append((leaf.info.flag, values[kind]))
    assert len(found) >= 5, found
    return found


@pytest.mark.parametrize("command", ["eval", "eval-instructions", "bench"])
@pytest.mark.parametrize(("flag", "value"), endpoint_overrides())
def test_an_endpoint_option_without_an_endpoint_is_refused_not_ignored(command, flag, value, tmp_path, capsys):
    # It was ignored: `--endpoint-batch-size 8` without --endpoint evaluated BM25 without a word.
    dataset = write_files(tmp_path / "ds", GOOD_BEIR)
    code = main([command, "--dataset", str(dataset), "--out", str(tmp_path / "out"), flag, value])
    err = capsys.readouterr().err
    assert f"{flag} {value} does not apply here: it overrides a field of --endpoint's spec" in err, err
    assert code == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("flag", "value"), endpoint_overrides())
def test_an_orchestrator_job_refuses_an_endpoint_option_without_an_endpoint(flag, value, tmp_path):
    from irforge.orchestrator.errors import JobSpecError
    from irforge.orchestrator.spec import JobSpec

    dataset = write_files(tmp_path / "ds", GOOD_BEIR)
    with pytest.raises(JobSpecError, match=f"{flag} {value} does not apply here"):
        JobSpec.of(dataset=str(dataset),
                   **{flag.lstrip("-").replace("-", "_"): int(value) if value.isdigit() else value}).validate()
