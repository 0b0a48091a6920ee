"""TLS to a team's endpoint, from its spec (ca_bundle, client_cert, client_key, tls): an SSL context
for the outbound HTTP clients (httpx, openai) and ClientTls for gRPC channels. irforge's own TLS
settings (IRFORGE_TLS_*, common/tls.py) never apply here: a team's server has its own CA.

`spec` is anything with `tls_file(name)`, `source`, `timeout_s` and `uses_tls` (an EndpointSpec, a
JudgeSpec, the LLM caller's spec); `error` is the spec's own error type, raised when a file it names
is not usable, so that each room reports a bad file in its own terms."""

from __future__ import annotations

import ssl

from irforge.common.tls import ClientTls


def ssl_context(spec, error: type[Exception]) -> ssl.SSLContext | bool:
    """`verify` for httpx and openai's client: True (the system CAs) unless the spec names a CA
    bundle or a client certificate; `error` (the spec's error type) when a named file is not usable."""
    ca, cert, key = (spec.tls_file(name) for name in ("ca_bundle", "client_cert", "client_key"))
    if not (ca or cert):
        return True
    where = spec.source or "endpoint spec"
    try:
        context = ssl.create_default_context(cafile=str(ca) if ca else None)
    except (ssl.SSLError, OSError) as problem:
        raise error(f"{where}: `ca_bundle` {ca}: not usable as CA certificates ({problem})") from None
    if cert:
        try:
            context.load_cert_chain(str(cert), str(key))
        except (ssl.SSLError, OSError) as problem:
            raise error(f"{where}: `client_cert` {cert} / `client_key` {key}: not a usable pair ({problem})") from None
    return context


def http_client(spec, error: type[Exception], headers: dict[str, str] | None = None):
    import httpx

    return httpx.Client(timeout=spec.timeout_s, headers=headers or {}, verify=ssl_context(spec, error))


def openai_http_client(spec, error: type[Exception]):
    """The httpx client openai.OpenAI should use, or None for its default (no TLS settings)."""
    verify = ssl_context(spec, error)
    if verify is True:
        return None
    import openai

    return openai.DefaultHttpxClient(verify=verify, timeout=spec.timeout_s)


def grpc_tls(spec) -> ClientTls | None:
    """TLS of a gRPC endpoint (None: plaintext, the endpoint's HOST:PORT as given)."""
    if not spec.uses_tls:
        return None
    return ClientTls(spec.tls_file("ca_bundle"), spec.tls_file("client_cert"), spec.tls_file("client_key"))
