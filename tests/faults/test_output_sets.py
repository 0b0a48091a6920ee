"""An output folder is one set: a kill -9 of `irforge eval` at any moment leaves the complete old
set (results.json with its run.trec) or the complete new one, the next run removes what a killed
run left behind (but not a live run's work), and files get the permissions the umask allows."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from irforge.common.files import atomic_write

SCIFACT_ARGS = ["--retriever", "bm25", "--top-k", "100"]


def irforge(*args: str) -> list[str]:
    return [sys.executable, "-m", "irforge.cli.main", *args]


def eval_args(beir_dir: Path, out: Path, index_dir: Path, k1: str) -> list[str]:
    return ["eval", "--dataset", str(beir_dir / "scifact"), "--out", str(out), "--index-dir", str(index_dir),
            "--k1", k1, *SCIFACT_ARGS]


def eval_argv(beir_dir: Path, out: Path, index_dir: Path, k1: str) -> list[str]:
    """A run to kill: its own interpreter, so SIGKILL lands on the process writing the set."""
    return irforge(*eval_args(beir_dir, out, index_dir, k1))


# The runs that complete (they put a set in place, or are checked for what they leave) go through
# the pre-imported irforge (tests/conftest.py: irforge_command): the same command, its own process.
PREIMPORTED: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def preimported(irforge_command):
    PREIMPORTED[:] = irforge_command


def run_eval(beir_dir, out, index_dir, k1) -> None:
    done = subprocess.run([*PREIMPORTED, *eval_args(beir_dir, out, index_dir, k1)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def signature(out: Path) -> tuple[float, str]:
    """(k1 recorded in results.json, sha256 of run.trec): what a reader of the folder sees."""
    k1 = json.loads((out / "results.json").read_text())["retriever"]["k1"]
    return k1, hashlib.sha256((out / "run.trec").read_bytes()).hexdigest()


def hidden_entries(out: Path) -> list[str]:
    """Temporary names inside OUT and beside it (OUT's own dot-names)."""
    inside = [p.name for p in out.iterdir() if p.name.startswith(".")] if out.is_dir() else []
    beside = [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]
    return sorted(inside + beside)


@pytest.fixture(scope="module")
def sets(beir_dir, tmp_path_factory):
    """The two complete sets an interrupted run may leave: k1 0.9 (old) and k1 1.5 (new)."""
    root = tmp_path_factory.mktemp("sets")
    index_dir = root / "indexes"
    found = {}
    for k1 in ("0.9", "1.5"):
        run_eval(beir_dir, root / k1, index_dir, k1)
        found[k1] = signature(root / k1)
    assert found["0.9"] != found["1.5"]
    return root, index_dir, found


def kill_when(argv, out: Path, moment, timeout=60.0) -> bool:
    """Start `argv`, SIGKILL it as soon as moment(out) holds (polled every 2 ms); True when it was
    killed, False when it finished first."""
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    try:
        while process.poll() is None and time.monotonic() < deadline:
            try:
                fired = moment(out)
            except FileNotFoundError:  # a name vanished between listing and looking
                fired = False
            if fired:
                process.send_signal(signal.SIGKILL)
                process.wait(30)
                return True
            time.sleep(0.002)
        return False
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)


def run_replaced(out: Path, inode: int):
    return lambda folder: (folder / "run.trec").stat().st_ino != inode


def temporaries_appear(folder: Path) -> bool:
    return bool(hidden_entries(folder))


def after(seconds: float):
    started = time.monotonic()
    return lambda folder: time.monotonic() - started >= seconds


def test_a_killed_eval_leaves_the_old_set_or_the_new_one(sets, beir_dir, tmp_path):
    root, index_dir, found = sets
    out = tmp_path / "out"
    moments = [("a temporary appears", lambda: temporaries_appear),
               ("run.trec is replaced", lambda: run_replaced(out, (out / "run.trec").stat().st_ino)),
               *((f"{s}s in", lambda s=s: after(s)) for s in (0.3, 0.8, 1.3, 1.8, 2.3))]
    killed = 0
    for name, moment in moments:
        run_eval(beir_dir, out, index_dir, "0.9")
        was_killed = kill_when(eval_argv(beir_dir, out, index_dir, "1.5"), out, moment())
        killed += was_killed
        seen = signature(out)
        assert seen in (found["0.9"], found["1.5"]), f"killed when {name}: results.json k1={seen[0]} beside another run.trec"
    assert killed >= 3  # the moments hit running processes, not finished ones


def test_the_next_run_removes_what_a_killed_run_left(sets, beir_dir, tmp_path):
    _, index_dir, found = sets
    out = tmp_path / "out"
    run_eval(beir_dir, out, index_dir, "0.9")
    assert kill_when(eval_argv(beir_dir, out, index_dir, "1.5"), out, temporaries_appear)
    left = hidden_entries(out)
    assert left  # the kill came while the run had temporaries out
    run_eval(beir_dir, out, index_dir, "1.5")
    assert hidden_entries(out) == []
    assert signature(out) == found["1.5"]


def test_a_live_runs_temporaries_are_kept(sets, beir_dir, tmp_path):
    """Only a dead process's leftovers go: a name carrying a live pid (this test's) stays."""
    _, index_dir, _ = sets
    out = tmp_path / "out"
    run_eval(beir_dir, out, index_dir, "0.9")
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()
    live_staging = tmp_path / f".out.irforge-{host}-{os.getpid()}-0a1b2c3d.staging"
    dead_staging = tmp_path / f".out.irforge-{host}-{dead.pid}-0a1b2c3d.staging"
    dead_temporary = out / f".results.json.irforge-{host}-{dead.pid}-0a1b2c3d.tmp"
    for folder in (live_staging, dead_staging):
        folder.mkdir()
        (folder / "results.json").write_text("{}")
    dead_temporary.write_text("{")
    run_eval(beir_dir, out, index_dir, "1.5")
    assert live_staging.is_dir() and not dead_staging.exists() and not dead_temporary.exists()


def test_a_new_set_replaces_the_old_one_whole(sets, beir_dir, tmp_path):
    """A judged layer of an earlier --fill-holes run must not sit beside results that never judged
    it; files irforge does not write (notes) stay."""
    _, index_dir, found = sets
    out = tmp_path / "out"
    run_eval(beir_dir, out, index_dir, "0.9")
    (out / "qrels.judged.tsv").write_text("query-id\tcorpus-id\tscore\n1\t31715818\t1\n")
    (out / "notes.txt").write_text("kept\n")
    run_eval(beir_dir, out, index_dir, "1.5")
    assert not (out / "qrels.judged.tsv").exists()
    assert (out / "notes.txt").read_text() == "kept\n"
    assert signature(out) == found["1.5"]


def test_outputs_get_the_permissions_the_umask_allows(sets, beir_dir, tmp_path):
    _, index_dir, _ = sets
    out = tmp_path / "out"
    previous = os.umask(0o022)
    try:
        run_eval(beir_dir, out, index_dir, "0.9")   # the subprocess inherits umask 022
        with atomic_write(tmp_path / "plain.txt") as handle:
            handle.write("x")
    finally:
        os.umask(previous)
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in [*out.iterdir(), tmp_path / "plain.txt"]}
    assert modes == {"results.json": "0o644", "run.trec": "0o644", "plain.txt": "0o644"}
    assert oct(out.stat().st_mode & 0o777) == "0o755"


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_without_renameat2_a_swap_killed_half_way_is_undone(tmp_path, monkeypatch):
    """Where the folders cannot be exchanged in one call, OUT is renamed aside first: a kill right
    then leaves no OUT, and the next writer puts the old set back before anything else."""
    from irforge.common import output_set
    from irforge.common.output_set import OutputSet

    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text('{"k1": 0.9}')
    (out / "run.trec").write_text("old run\n")
    aside = tmp_path / f".out.irforge-{socket.gethostname()}-{dead_pid()}-0a1b2c3d.old"
    os.rename(out, aside)  # where a writer killed between its two renames leaves things
    monkeypatch.setattr(output_set, "_exchange", lambda a, b: False)
    with pytest.raises(RuntimeError), OutputSet(out):
        assert (out / "run.trec").read_text() == "old run\n"   # back before the new set is written
        raise RuntimeError("the new run fails")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with OutputSet(out) as staging:
        (staging / "results.json").write_text('{"k1": 1.5}')
        (staging / "run.trec").write_text("new run\n")
    assert (out / "run.trec").read_text() == "new run\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_out_holding_folders_or_a_file_is_refused_before_any_work(beir_dir, tmp_path):
    (tmp_path / "busy" / "indexes").mkdir(parents=True)
    (tmp_path / "file").write_text("mine\n")
    for out, message in [("busy", "holds folders (indexes)"), ("file", "exists and is not a folder"),
                         ("file/sub", f"{tmp_path / 'file'} is not a folder")]:
        done = subprocess.run([*PREIMPORTED, "eval", "--dataset", str(beir_dir / "scifact"), "--out", str(tmp_path / out),
                               "--index-dir", str(tmp_path / "idx")], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and f"irforge eval: error: --out {tmp_path / out}: {message}" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and not (tmp_path / "idx").exists()  # nothing was indexed
    assert (tmp_path / "file").read_text() == "mine\n"


def test_a_symlinked_out_stays_a_link(sets, beir_dir, tmp_path):
    _, index_dir, found = sets
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    run_eval(beir_dir, tmp_path / "link", index_dir, "1.5")
    assert (tmp_path / "link").is_symlink() and signature(tmp_path / "real") == found["1.5"]


def test_a_job_whose_output_names_a_file_is_refused_at_submission(beir_dir, tmp_path):
    """Not after the job ran, when its evaluate step copies the set there."""
    from irforge.orchestrator.errors import JobSpecError
    from irforge.orchestrator.spec import JobSpec

    (tmp_path / "taken").write_text("mine\n")
    spec = JobSpec.of(dataset=str(beir_dir / "scifact"), output=str(tmp_path / "taken"))
    with pytest.raises(JobSpecError, match=f"job spec field 'output': {tmp_path / 'taken'}: exists and is not a folder"):
        spec.check_paths()


def test_qc_output_uses_the_same_swap_and_cleaning(tmp_path):
    """`irforge qc` replaces its whole OUTDIR (a dataset with qrels/): the same one-step swap, and a
    killed qc run's staging folder is removed by the next one."""
    from irforge.judge.qc import writer

    target = tmp_path / "out"
    (target / "qrels").mkdir(parents=True)
    (target / "qrels" / "test.tsv").write_text("old\n")
    killed = tmp_path / f".out.irforge-{socket.gethostname()}-{dead_pid()}-0a1b2c3d.staging"
    killed.mkdir()
    with writer.staged_folder(target) as staged:
        (staged / "qrels").mkdir()
        (staged / "qrels" / "test.tsv").write_text("new\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert (target / "qrels" / "test.tsv").read_text() == "new\n"
