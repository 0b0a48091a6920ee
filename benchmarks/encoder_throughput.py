"""Corpus-encoding throughput of the encoder paths, against plain sentence-transformers.

On the first N SciFact documents (texts = Document.full_text, MiniLM's 256-token cap), sent as
calls of B texts, every path doing the same forward passes (EncoderSpec.batch_size = B, so one
call is one forward pass everywhere):

  a  in-process SentenceTransformer.encode(call, batch_size=B)          the baseline
  b  EncoderCore.encode(call)                                           in-process core
  c  RayEncoder over a Serve deployment (1 replica, num_cpus=2), 1 and 2 calls in flight
  d  gRPC: thin front (irforge.models.server) over RayEncoder, 1 and 2 calls in flight
     gRPC: thin front over an in-process EncoderCore (the no-Ray service)
     gRPC: Ray Serve's own gRPC proxy to the same deployment, 1 and 2 calls in flight

All legs run in one session (Ray, Serve, its gRPC proxy and the replica up; idle when a leg does
not use them), in interleaved rounds, so a burst of other work on a shared machine hits every leg
alike; each leg's best round is reported. The baseline is also run once before Ray starts
(a-no-ray) to show what Ray's idle background costs on its own. Each figure is documents/s and
its ratio to (a); the product goal is >= 0.90 for (c) and (d). Also: peak RSS of the driver and
of the replica, Ray's processes' RSS, the replica's torch threads, the share of the CPUs other
processes used during each round (from /proc/stat minus this process tree: a round with a large
share is contended), and the largest difference of each path's vectors from (a)'s.

Ray runs on loopback (start_local_ray). Serve's gRPC proxy binds [::]:<port> (it has no host
option); --no-proxy leaves it out.

Run: .venv/bin/python benchmarks/encoder_throughput.py [--docs 1000 --batch-size 100 --rounds 3]
Writes benchmarks/results/encoder_throughput.json.
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from _common import rss_mib, table, write_results
from irforge.data import BeirDataset
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole, resolve_model

DEFAULT_DATASET = Path(os.environ.get("IRFORGE_SHARED", "/work/shared")) / "data" / "beir" / "scifact"
MODEL = "all-MiniLM-L6-v2"
ROLE = TextRole.PASSAGE


def chunks(items: list, size: int) -> list[list]:
    return [items[start:start + size] for start in range(0, len(items), size)]


def status_kib(field: str, pid: int | str = "self") -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def descendants(root: int) -> list[int]:
    """Processes under `root` (Ray's gcs_server, raylet, workers are children of the driver)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


TICK = os.sysconf("SC_CLK_TCK")


def cpu_snapshot() -> tuple[float, float]:
    """(CPU seconds the whole machine has been busy, CPU seconds of this process and its tree)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)  # minus idle and iowait
    mine = 0
    for pid in [os.getpid(), *descendants(os.getpid())]:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            mine += int(stat[11]) + int(stat[12])
        except (OSError, IndexError, ValueError):
            pass
    return busy / TICK, mine / TICK


def ray_rss_mib() -> float:
    return round(sum((status_kib("VmRSS", pid) or 0) for pid in descendants(os.getpid())) / 1024, 1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def versions() -> dict:
    found = {}
    for name in ("ray", "torch", "sentence-transformers", "transformers", "grpcio"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


class Leg:
    def __init__(self, key: str, path: str, encode_calls, in_flight: int = 1):
        self.key, self.path, self.encode_calls, self.in_flight = key, path, encode_calls, in_flight
        self.seconds: list[float] = []
        self.loads: list[tuple[float, float]] = []
        self.others: list[float] = []  # share of the machine's CPU used by other processes
        self.vectors: np.ndarray | None = None

    def run(self, calls: list[list[str]]) -> float:
        load_before = os.getloadavg()[0]
        busy_before, mine_before = cpu_snapshot()
        start = time.perf_counter()
        vectors = np.concatenate(self.encode_calls(calls))
        seconds = time.perf_counter() - start
        busy_after, mine_after = cpu_snapshot()
        others = ((busy_after - busy_before) - (mine_after - mine_before)) / ((os.cpu_count() or 1) * seconds)
        self.loads.append((round(load_before, 2), round(os.getloadavg()[0], 2)))
        self.others.append(round(max(0.0, others), 3))
        self.seconds.append(seconds)
        self.vectors = vectors
        return seconds

    def clear(self) -> None:
        self.seconds.clear(), self.loads.clear(), self.others.clear()


def pipelined(function, in_flight: int):
    """encode_calls that keeps `in_flight` calls outstanding (threads), results in order."""
    if in_flight == 1:
        return lambda calls: [function(call) for call in calls]

    def run(calls):
        with ThreadPoolExecutor(in_flight) as pool:
            return list(pool.map(function, calls))

    return run


def st_calls(model, batch_size: int):
    return lambda calls: [model.encode(call, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
                                       show_progress_bar=False) for call in calls]


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` shuts Ray down
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--docs", type=int, default=1000, help="the first N documents of the corpus")
    parser.add_argument("--batch-size", type=int, default=100, help="texts per call (and per forward pass)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds over all legs, interleaved (a burst of other work hits every leg alike); "
                             "each leg's best round is reported")
    parser.add_argument("--num-cpus", type=float, default=2, help="the replica's num_cpus (its torch threads)")
    parser.add_argument("--worker-niceness", type=int, default=None,
                        help="Ray workers' nice level (Ray's default: 15; 0 = the driver's priority)")
    parser.add_argument("--no-proxy", action="store_true", help="skip Serve's gRPC proxy (it binds [::])")
    args = parser.parse_args()

    dataset = BeirDataset.open(args.dataset)
    texts = [d.full_text for d in itertools.islice(dataset.corpus(), args.docs)]
    calls = chunks(texts, args.batch_size)
    spec = EncoderSpec(MODEL, batch_size=args.batch_size)
    words = sum(len(t.split()) for t in texts) / len(texts)
    print(f"{dataset.name}: first {len(texts):,} documents (mean {words:.0f} words), calls of {args.batch_size} texts, "
          f"{args.rounds} interleaved rounds, best reported; {os.cpu_count()} CPUs\n", flush=True)
    memory: dict = {}

    import torch
    from irforge.models.client import RemoteEncoder
    from irforge.models.server import start_encoder_server
    from sentence_transformers import SentenceTransformer

    source, _, _ = resolve_model(spec)
    model = SentenceTransformer(source, device="cpu")
    before_ray = Leg("a-no-ray", "SentenceTransformer.encode, before Ray starts", st_calls(model, args.batch_size))
    before_ray.run(calls[:1])  # warm-up
    before_ray.clear()
    before_ray.run(calls)
    print(f"  {before_ray.key:<14} {before_ray.path:<58} {len(texts) / before_ray.seconds[-1]:8.2f} docs/s  "
          f"(others used {before_ray.others[-1]:.0%} of the CPUs)", flush=True)
    memory["in_process_torch_threads"] = torch.get_num_threads()

    import grpc
    import ray  # noqa: F401
    from irforge.common.grpc_server import open_channel
    from irforge.models import protocol
    from irforge.models.serve import (
        EncoderDeploymentConfig,
        start_encoder_app,
        start_local_ray,
        stop_local_ray,
    )
    from irforge.models.serve_client import RayEncoder
    from irforge.v1 import models_pb2_grpc
    from ray import serve  # noqa: F401

    config = EncoderDeploymentConfig(num_replicas=1, num_cpus=args.num_cpus, max_ongoing_requests=4)
    servers, channels = [], []
    try:
        started = time.perf_counter()
        proxy_port = free_port()
        if args.no_proxy:
            start_local_ray(num_cpus=2, worker_niceness=args.worker_niceness)
        else:  # Serve's options are cluster-scoped: the proxy is configured when Serve starts
            start_local_ray(num_cpus=2, worker_niceness=args.worker_niceness, proxy_location="HeadOnly",
                            http_options={"host": "127.0.0.1", "port": free_port()},
                            grpc_options={"port": proxy_port, "grpc_servicer_functions": [
                                "irforge.v1.models_pb2_grpc.add_EncoderServicer_to_server"]})
        handle = start_encoder_app(spec, config, route_prefix=None if args.no_proxy else "/")
        startup = {"ray_serve_replica_s": round(time.perf_counter() - started, 1)}
        encoder = RayEncoder(handle)
        replica = encoder.describe()["replica"]
        print(f"  (Ray + Serve + replica up in {startup['ray_serve_replica_s']} s; replica pid {replica['pid']}: "
              f"torch threads {replica['torch_threads']}, OMP_NUM_THREADS={replica['omp_num_threads']}, "
              f"nice {replica['niceness']})", flush=True)

        _, tree_before = cpu_snapshot()
        time.sleep(10)
        _, tree_after = cpu_snapshot()
        startup["ray_idle_cpu_share"] = round((tree_after - tree_before) / ((os.cpu_count() or 1) * 10), 3)
        print(f"  (Ray + Serve idle used {startup['ray_idle_cpu_share']:.1%} of the CPUs over 10 s)", flush=True)

        core = EncoderCore(spec)
        servers.append(start_encoder_server({MODEL: core}))
        front_core = RemoteEncoder(f"127.0.0.1:{servers[-1].port}")
        servers.append(start_encoder_server({MODEL: encoder}))
        front_ray = RemoteEncoder(f"127.0.0.1:{servers[-1].port}")

        legs = [
            Leg("a", "SentenceTransformer.encode (baseline; Ray idle)", st_calls(model, args.batch_size)),
            Leg("b", "EncoderCore.encode", lambda cs: [core.encode(c, ROLE) for c in cs]),
            Leg("d-front-core", "gRPC thin front -> in-process EncoderCore",
                pipelined(lambda c: front_core.encode(c, ROLE), 1)),
            Leg("c1", "RayEncoder -> Serve replica", lambda cs: [encoder.encode(c, ROLE) for c in cs]),
            Leg("c2", "RayEncoder -> Serve replica", lambda cs: list(encoder.encode_batches(cs, ROLE, in_flight=2)), 2),
            Leg("d-front-ray1", "gRPC thin front -> RayEncoder -> Serve replica", pipelined(lambda c: front_ray.encode(c, ROLE), 1)),
            Leg("d-front-ray2", "gRPC thin front -> RayEncoder -> Serve replica", pipelined(lambda c: front_ray.encode(c, ROLE), 2), 2),
        ]
        if not args.no_proxy:
            channel = open_channel(f"127.0.0.1:{proxy_port}")
            channels.append(channel)
            stub = models_pb2_grpc.EncoderStub(channel)
            application = (("application", "encoder"),)

            def via_proxy(call):
                reply = stub.Encode(protocol.encode_request(call, ROLE), metadata=application, timeout=600)
                return protocol.vectors_from_response(reply)

            deadline = time.monotonic() + 60
            while True:  # the proxy learns about the app by long poll, a moment after serve.run
                try:
                    via_proxy([])
                    break
                except grpc.RpcError as error:
                    if error.code() not in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            legs += [Leg("d-proxy1", "Serve gRPC proxy -> Serve replica (Encode method)", pipelined(via_proxy, 1)),
                     Leg("d-proxy2", "Serve gRPC proxy -> Serve replica (Encode method)", pipelined(via_proxy, 2), 2)]

        for leg in legs:  # warm-up: one untimed call each
            leg.run(calls[:1])
            leg.clear()
        for round_ in range(args.rounds):
            print(f"  round {round_ + 1}", flush=True)
            for leg in legs:
                seconds = leg.run(calls)
                print(f"    {leg.key:<14} {leg.path:<58} {len(texts) / seconds:8.2f} docs/s  "
                      f"(others used {leg.others[-1]:.0%} of the CPUs)", flush=True)

        replica = RayEncoder(handle).describe()["replica"]
        memory["replica_peak_rss_mib"] = replica.get("peak_rss_mib")
        memory["replica_torch_threads"] = replica["torch_threads"]
        memory["replica_niceness"] = replica["niceness"]
        memory["ray_processes_rss_mib"] = ray_rss_mib()
        memory["driver_peak_rss_mib"] = round((status_kib("VmHWM") or 0) / 1024, 1)
        memory["driver_rss_mib"] = rss_mib()
        memory["note"] = ("driver holds two copies of MiniLM (baseline + EncoderCore) and the Ray client; "
                          "ray_processes = every process under the driver (gcs, raylet, controller, proxy, replica, idle workers)")
    finally:
        for channel in channels:
            channel.close()
        for server in servers:
            server.stop(grace=0)
        stop_local_ray()

    # -- report -------------------------------------------------------------------------------
    reference = legs[0]
    base = reference.vectors
    rows = []
    for leg in [before_ray, *legs]:
        best = min(leg.seconds)
        rows.append({"key": leg.key, "path": leg.path, "in_flight": leg.in_flight, "seconds": round(best, 2),
                     "docs_per_s": round(len(texts) / best, 2),
                     "ratio_to_a": round(min(reference.seconds) / best, 3),
                     "seconds_per_round": [round(x, 2) for x in leg.seconds],
                     "other_processes_cpu_share_per_round": leg.others,
                     "loadavg_1m_before_after": leg.loads,
                     "max_abs_diff_vs_a": float(np.abs(leg.vectors - base).max())})
    print()
    print(table(["leg", "path", "in flight", "best s", "docs/s", "ratio to a", "rounds (s)", "others' CPU", "max |diff| vs a"],
                [[r["key"], r["path"], r["in_flight"], r["seconds"], r["docs_per_s"], r["ratio_to_a"],
                  " ".join(f"{x:.1f}" for x in r["seconds_per_round"]),
                  " ".join(f"{x:.0%}" for x in r["other_processes_cpu_share_per_round"]), r["max_abs_diff_vs_a"]] for r in rows]))
    print("\nmemory:", memory)
    goal = {r["key"]: r["ratio_to_a"] >= 0.90 for r in rows if r["key"].startswith(("c", "d"))}
    print("goal ratio >= 0.90:", goal)
    path = write_results(__file__, {
        "parameters": {"dataset": str(args.dataset), "docs": len(texts), "mean_words": round(words, 1),
                       "batch_size": args.batch_size, "rounds": args.rounds, "model": MODEL,
                       "replica": {"num_replicas": 1, "num_cpus": args.num_cpus, "worker_niceness": args.worker_niceness,
                                   "max_ongoing_requests": config.max_ongoing_requests},
                       "proxy": not args.no_proxy},
        "versions": versions(),
        "startup": startup,
        "results": rows,
        "memory": memory,
        "goal_ratio_0_90": goal,
    })
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
