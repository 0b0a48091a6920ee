"""Channel settings shared with the servers (large messages travel in chunks below this cap), and
TLS: a client trusts a CA (and may present a certificate, for servers that require one), read from
the same variables irforge itself uses, so one setting covers the CLI and the SDK:

    IRFORGE_TLS_CA             PEM CA bundle; set: channels use TLS
    IRFORGE_TLS_CLIENT_CERT    PEM certificate for mutual TLS, with IRFORGE_TLS_CLIENT_KEY

or explicitly: `EvaluatorClient(address, tls=Tls(ca="ca.pem"))`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import grpc

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES), ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]


@dataclass(frozen=True)
class Tls:
    """What a client trusts and presents. ca None: the system's CAs."""

    ca: str | Path | None = None
    cert: str | Path | None = None
    key: str | Path | None = None

    def __post_init__(self):
        if bool(self.cert) != bool(self.key):
            raise ValueError("Tls: a client certificate needs its key (cert and key go together)")

    @classmethod
    def from_env(cls) -> Tls | None:
        ca, cert, key = (os.environ.get(name) or None for name in
                         ("IRFORGE_TLS_CA", "IRFORGE_TLS_CLIENT_CERT", "IRFORGE_TLS_CLIENT_KEY"))
        return cls(ca, cert, key) if ca or cert else None

    def credentials(self) -> grpc.ChannelCredentials:
        def read(path):
            return Path(path).read_bytes() if path else None

        return grpc.ssl_channel_credentials(read(self.ca), read(self.key), read(self.cert))


def channel(address: str, tls: Tls | None = None) -> grpc.Channel:
    """A channel to `address`: TLS with `tls`, else with the environment's settings, else plaintext."""
    tls = tls or Tls.from_env()
    if tls is None:
        return grpc.insecure_channel(address, options=OPTIONS)
    return grpc.secure_channel(address, tls.credentials(), options=OPTIONS)
