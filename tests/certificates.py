"""Certificates made in the test, for TLS and mutual TLS on 127.0.0.1: a CA, certificates it signs
(a server's with 127.0.0.1 as its address, clients' with a subject CN), written as PEM files.
One copy for tests/faults/test_tls.py, tests/accounts (mTLS identities) and tests/web (HTTPS)."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def new_key():
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def certificate(subject: str, key, issuer: str, issuer_key, *, ca: bool = False, server: bool = False):
    """`subject`'s certificate for `key`, signed by `issuer_key` (itself for a self-signed CA);
    `server`: valid for the address 127.0.0.1. Valid from 5 minutes ago for a day."""
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                        critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def write_pem(path: Path, certificate=None, key=None) -> Path:
    """A certificate, or else a private key (PKCS8, unencrypted), as a PEM file at `path`."""
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM) if certificate is not None else
                     key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return path
