"""Smoke check of the chart's RayService mode on one machine, without Kubernetes:

  1. a Ray head started the way KubeRay starts one (`ray start --head --block`), on loopback;
  2. the encoder application deployed through the Serve application builder the RayService's
     serveConfigV2 names (irforge.models.serve_app:app, with args);
  3. the Encoder gRPC front (`python -m irforge.cli.encoder_front front`) connecting as a Ray
     Client (ray://...), as the chart's models Deployment does;
  4. RemoteEncoder through the front: vectors equal to in-process EncoderCore's, health SERVING.

    python deploy/check_ray_front.py            # exits 0 on success; tears everything down

Not part of the test suite (a Ray head, a replica and a Ray Client take 1-2 minutes and ~2 GB).
If ~/.ray/auth_token exists, `ray start` turns on Ray's token authentication; the drivers below
then need RAY_AUTH_MODE=token, which this script sets in that case.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
GCS_PORT, CLIENT_PORT = 6390, 10011
BIN = Path(sys.executable).parent

DEPLOY = f"""
import ray
from ray import serve
from ray.serve._private.api import call_user_app_builder_with_args_if_necessary
from irforge.models.serve_app import app
ray.init(address="127.0.0.1:{GCS_PORT}")
serve.start(proxy_location="Disabled")
serve.run(call_user_app_builder_with_args_if_necessary(app, {{"model": "{MODEL}", "num_cpus": 1}}),
          name="encoder", route_prefix=None)
"""


def environment() -> dict:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "HF_HUB_OFFLINE": "1",
           # Keep Ray on 127.0.0.1 (Ray 2.60 otherwise rewrites a loopback node address).
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    if (Path.home() / ".ray" / "auth_token").is_file():
        env["RAY_AUTH_MODE"] = "token"
    return env


def stop(process: subprocess.Popen | None, grace: float = 15.0) -> None:
    """SIGTERM the process group we started, SIGKILL what is left after `grace`."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def main() -> int:
    import numpy as np
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from irforge.common.grpc_server import open_channel
    from irforge.models.client import RemoteEncoder
    from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole

    env = environment()
    started = time.monotonic()
    temp = tempfile.mkdtemp(prefix="irforge-ray-")
    head = subprocess.Popen(
        [str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={GCS_PORT}",
         f"--ray-client-server-port={CLIENT_PORT}", "--min-worker-port=20000", "--max-worker-port=20999",
         "--dashboard-agent-listen-port=52399", "--num-cpus=2", "--include-dashboard=false",
         f"--temp-dir={temp}", "--disable-usage-stats"],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    front = None
    try:
        subprocess.run([sys.executable, "-c", "import time, ray\n"
                        "for _ in range(60):\n"
                        f"    try: ray.init(address='127.0.0.1:{GCS_PORT}'); break\n"
                        "    except Exception: time.sleep(2)\n"], env=env, check=True, timeout=180)
        subprocess.run([sys.executable, "-c", DEPLOY], env=env, check=True, timeout=600)
        print(f"encoder application deployed ({time.monotonic() - started:.0f}s)", flush=True)
        front = subprocess.Popen(
            [sys.executable, "-m", "irforge.cli.encoder_front", "front", "--ray-address", f"ray://127.0.0.1:{CLIENT_PORT}",
             "--host", "127.0.0.1", "--port", "0", "--connect-timeout", "300"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, start_new_session=True)
        address = re.search(r"listening on (\S+)", front.stdout.readline()).group(1)
        print(f"front serving on {address} ({time.monotonic() - started:.0f}s)", flush=True)

        texts = ["BRCA1 mutations raise breast cancer risk.", "Vitamin D and bone density in older adults.", "a"] * 40
        remote = RemoteEncoder(address)
        begun = time.monotonic()
        got = remote.encode(texts, TextRole.PASSAGE)
        rate = len(texts) / (time.monotonic() - begun)
        want = EncoderCore(EncoderSpec(MODEL)).encode(texts, TextRole.PASSAGE)
        with open_channel(address) as channel:
            status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="irforge.v1.Encoder")).status
        difference = float(np.abs(got - want).max())
        print(f"{len(texts)} texts through the front at {rate:.0f}/s; max |front - in-process| = {difference}; "
              f"health {health_pb2.HealthCheckResponse.ServingStatus.Name(status)}", flush=True)
        return 0 if difference < 1e-5 and status == health_pb2.HealthCheckResponse.SERVING else 1
    finally:
        stop(front)
        stop(head, grace=30.0)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
