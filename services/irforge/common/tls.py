"""TLS for irforge's gRPC: a server's certificate (and, for mutual TLS, the CA its clients' certificates
must chain to), and what a client trusts (and the certificate it presents).

Configuration is the environment, so one setting reaches every channel a process opens (the CLI's
--server/--corpus-server calls, the orchestrator's calls to its services, shard workers) and the
services `irforge serve` starts; the `--tls-*` flags set these variables (cli/main.py):

    server (irforge service)            client (every irforge channel to an irforge service)
    IRFORGE_TLS_CERT   --tls-cert       IRFORGE_TLS_CA           --tls-ca           trust this CA
    IRFORGE_TLS_KEY    --tls-key        IRFORGE_TLS_CLIENT_CERT  --tls-client-cert  mutual TLS
    IRFORGE_TLS_CLIENT_CA --tls-client-ca  (require client certs)  IRFORGE_TLS_CLIENT_KEY --tls-client-key

Per channel: `--channel-tls CHANNEL=PEM|plaintext` (repeatable; $IRFORGE_TLS_CHANNELS, the same
pairs comma-separated) overrides --tls-ca for the channels to one service, so a plaintext corpus
service beside a TLS evaluator is reachable ("corpus=plaintext,evaluator=/etc/irforge/ca.pem").
The channels are CHANNELS, the services irforge's clients call; a channel not named takes --tls-ca
(TLS when it is set, plaintext else). The client certificate (--tls-client-cert) goes with every
TLS channel.

A team's endpoints are not irforge's services: their TLS comes from the endpoint spec (ca_bundle,
client_cert, client_key), never from these variables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from irforge.common.allowed_roots import checked

if TYPE_CHECKING:   # grpc is the platform extra's: imported where credentials are made
    import grpc

SERVER_VARIABLES = {"cert": "IRFORGE_TLS_CERT", "key": "IRFORGE_TLS_KEY", "client_ca": "IRFORGE_TLS_CLIENT_CA"}
CLIENT_VARIABLES = {"ca": "IRFORGE_TLS_CA", "cert": "IRFORGE_TLS_CLIENT_CERT", "key": "IRFORGE_TLS_CLIENT_KEY"}
# The services irforge's clients open channels to, each of which may have its own TLS setting.
CHANNELS = ("corpus", "evaluator", "encoder", "judge", "orchestrator")
CHANNELS_VARIABLE = "IRFORGE_TLS_CHANNELS"
PLAINTEXT = "plaintext"


class TlsConfigError(ValueError):
    """A TLS setting that cannot work: a missing file, a certificate without its key."""


def read_pem(path: str | Path, what: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise TlsConfigError(f"{what} {path}: cannot read it ({error.strerror})") from None
    if b"-----BEGIN" not in data:
        raise TlsConfigError(f"{what} {path}: not a PEM file (no -----BEGIN line)")
    return data


def spec_file(value: str | None, *, source: str, name: str, error: type[Exception] = TlsConfigError) -> Path | None:
    """A file an endpoint or judge spec names for TLS (ca_bundle, client_cert, client_key):
    relative to the spec's folder, inside the allowed roots when a job opens it, existing."""
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_absolute() and source and Path(source).is_file():
        path = Path(source).parent / path
    path = checked(path, f"{source}: `{name}`")
    if not path.is_file():
        raise error(f"{source}: `{name}` {path} not found")
    return path


@dataclass(frozen=True)
class ServerTls:
    cert: Path
    key: Path
    client_ca: Path | None = None        # set: clients must present a certificate chaining to it (mTLS)

    def credentials(self) -> grpc.ServerCredentials:
        import grpc

        pair = (read_pem(self.key, "TLS key"), read_pem(self.cert, "TLS certificate"))
        client_ca = read_pem(self.client_ca, "TLS client CA") if self.client_ca else None
        return grpc.ssl_server_credentials([pair], root_certificates=client_ca, require_client_auth=client_ca is not None)

    @classmethod
    def from_settings(cls, cert, key, client_ca=None) -> ServerTls | None:
        """None when neither certificate nor key is given (plaintext); an error when one is missing."""
        if not cert and not key:
            if client_ca:
                raise TlsConfigError("--tls-client-ca needs --tls-cert and --tls-key: mutual TLS is TLS first")
            return None
        if not cert or not key:
            raise TlsConfigError("TLS needs both --tls-cert and --tls-key "
                                 f"(${SERVER_VARIABLES['cert']}, ${SERVER_VARIABLES['key']})")
        return cls(Path(cert), Path(key), Path(client_ca) if client_ca else None)

    @classmethod
    def from_env(cls) -> ServerTls | None:
        return cls.from_settings(*(os.environ.get(v) or None for v in SERVER_VARIABLES.values()))


@dataclass(frozen=True)
class ClientTls:
    ca: Path | None = None               # None: the system's trusted CAs
    cert: Path | None = None             # with key: the client's certificate, for servers that require one
    key: Path | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        import grpc

        return grpc.ssl_channel_credentials(
            root_certificates=read_pem(self.ca, "TLS CA bundle") if self.ca else None,
            private_key=read_pem(self.key, "TLS client key") if self.key else None,
            certificate_chain=read_pem(self.cert, "TLS client certificate") if self.cert else None)

    @classmethod
    def from_settings(cls, ca=None, cert=None, key=None) -> ClientTls | None:
        """None when nothing is set (plaintext channels)."""
        if bool(cert) != bool(key):
            raise TlsConfigError("a TLS client certificate needs its key, and a key its certificate "
                                 f"(${CLIENT_VARIABLES['cert']}, ${CLIENT_VARIABLES['key']})")
        if not (ca or cert):
            return None
        return cls(Path(ca) if ca else None, Path(cert) if cert else None, Path(key) if key else None)

    @classmethod
    def from_env(cls) -> ClientTls | None:
        return cls.from_settings(*(os.environ.get(v) or None for v in CLIENT_VARIABLES.values()))


def channel_settings(text: str | None, source: str = f"${CHANNELS_VARIABLE}") -> dict[str, str]:
    """`corpus=plaintext,evaluator=/ca.pem` as {channel: PEM path or "plaintext"}; TlsConfigError
    naming the pair and `source` for anything else."""
    settings: dict[str, str] = {}
    for pair in filter(None, (part.strip() for part in (text or "").split(","))):
        channel, equals, value = (part.strip() for part in pair.partition("="))
        if not equals or channel not in CHANNELS or not value:
            raise TlsConfigError(f"{source}: {pair!r} is not CHANNEL=PEM or CHANNEL={PLAINTEXT} "
                                 f"(channels: {', '.join(CHANNELS)})")
        settings[channel] = value
    return settings


def channel_tls(channel: str) -> ClientTls | None:
    """The client TLS of the channels to `channel` (one of CHANNELS): its own setting in
    $IRFORGE_TLS_CHANNELS, else the environment's default (ClientTls.from_env)."""
    own = channel_settings(os.environ.get(CHANNELS_VARIABLE)).get(channel)
    if own is None:
        return ClientTls.from_env()
    if own == PLAINTEXT:
        return None
    cert, key = (os.environ.get(CLIENT_VARIABLES[name]) or None for name in ("cert", "key"))
    return ClientTls.from_settings(own, cert, key)
