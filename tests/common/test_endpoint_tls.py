"""TLS to a team's endpoint (irforge.common.endpoint_tls): a file the spec names that is not usable
is refused with the spec's own error, naming the file, before any request."""

from __future__ import annotations

import pytest

from irforge.common.endpoint_tls import http_client, openai_http_client, ssl_context
from irforge.endpoints.errors import EndpointSpecError
from irforge.endpoints.spec import EndpointSpec


class OtherSpecError(ValueError):
    """Another room's spec error (the judge's, the LLM caller's): raised as given."""


def _spec(tmp_path, **tls) -> EndpointSpec:
    return EndpointSpec.from_dict({"kind": "search-http", "url": "https://search.example:8443", **tls},
                                  source=str(tmp_path / "endpoint.yaml"))


def test_no_tls_file_means_the_system_cas(tmp_path):
    assert ssl_context(_spec(tmp_path), EndpointSpecError) is True


def test_a_ca_bundle_that_is_no_certificate_gives_the_specs_error_naming_the_file(tmp_path):
    bad = tmp_path / "team-ca.pem"
    bad.write_text("not a certificate\n")
    spec = _spec(tmp_path, ca_bundle=str(bad))
    with pytest.raises(EndpointSpecError, match="`ca_bundle`") as raised:
        ssl_context(spec, EndpointSpecError)
    assert str(bad) in str(raised.value) and "not usable as CA certificates" in str(raised.value)
    with pytest.raises(OtherSpecError, match=str(bad)):   # whichever error type the caller's spec has
        openai_http_client(spec, OtherSpecError)
    with pytest.raises(EndpointSpecError, match=str(bad)):
        http_client(spec, EndpointSpecError)


def test_a_client_certificate_that_is_no_pair_gives_the_specs_error_naming_both_files(tmp_path):
    cert, key = tmp_path / "client.pem", tmp_path / "client.key"
    cert.write_text("not a certificate\n")
    key.write_text("not a key\n")
    with pytest.raises(EndpointSpecError, match="not a usable pair") as raised:
        ssl_context(_spec(tmp_path, client_cert=str(cert), client_key=str(key)), EndpointSpecError)
    assert str(cert) in str(raised.value) and str(key) in str(raised.value)
