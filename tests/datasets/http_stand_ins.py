"""Two real HTTP servers on 127.0.0.1 for the download tests: an archive server that can misbehave
the ways networks do, and a forward proxy that counts what passes through it."""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_on_loopback(handler) -> tuple[ThreadingHTTPServer, str]:
    """A threaded HTTP server for `handler` on a free port of 127.0.0.1, serving in a daemon thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def stop(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()


@dataclass
class Served:
    path: str
    range: str | None
    via_proxy: bool


@dataclass
class ArchiveServer:
    """Serves `files` (URL path -> bytes) with Range support (206). `drop` maps a path to how many
    of its next requests are cut off halfway through the body (the full Content-Length promised,
    half sent, the connection closed); `replace` maps a path to other bytes to serve in its place."""
    files: dict[str, bytes]
    drop: dict[str, int] = field(default_factory=dict)
    replace: dict[str, bytes] = field(default_factory=dict)
    requests: list[Served] = field(default_factory=list)

    def __post_init__(self):
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = urllib.parse.urlsplit(self.path).path
                owner.requests.append(Served(path, self.headers.get("Range"), self.headers.get("Via") == "test-proxy"))
                body = owner.replace.get(path, owner.files.get(path))
                if body is None:
                    self.send_error(404)
                    return
                start = 0
                wanted = self.headers.get("Range")
                if wanted and wanted.startswith("bytes=") and wanted.endswith("-"):
                    start = int(wanted[6:-1])
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(body)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                part = body[start:]
                self.send_header("Content-Type", "application/zip")
                self.send_header("Content-Length", str(len(part)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if owner.drop.get(path, 0) > 0:
                    owner.drop[path] -= 1
                    self.wfile.write(part[: len(part) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)   # the peer sees the body end early
                    return
                self.wfile.write(part)

            def log_message(self, *args):
                pass

        self.server, self.url = serve_on_loopback(Handler)

    def close(self) -> None:
        stop(self.server)


class ForwardProxy:
    """A plain-HTTP forward proxy: takes absolute-form requests (`GET http://host/path`), fetches
    them from the origin with the client's Range header, relays status, headers and body, and
    counts the requests it carried."""

    def __init__(self):
        self.requests: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                owner.requests.append(self.path)
                target = urllib.parse.urlsplit(self.path)
                origin = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
                headers = {"Via": "test-proxy"}
                if self.headers.get("Range"):
                    headers["Range"] = self.headers["Range"]
                origin.request("GET", target.path, headers=headers)
                answer = origin.getresponse()
                body = answer.read()
                self.send_response(answer.status)
                for name in ("Content-Type", "Content-Range", "Accept-Ranges"):
                    if answer.getheader(name):
                        self.send_header(name, answer.getheader(name))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                origin.close()

            def log_message(self, *args):
                pass

        self.server, self.url = serve_on_loopback(Handler)

    def close(self) -> None:
        stop(self.server)
