"""The accounts side of the orchestrator's gRPC server: who the caller of every call is.

`CallerCheck` (a server interceptor) resolves the caller of each call of every service the process
hosts (Orchestrator, Accounts, Leaderboard) and binds it with identity.acting_as for the whole
call, response streams included; a call without a valid credential ends UNAUTHENTICATED before
any servicer runs. gRPC's own services (health, reflection) answer anyone: probes carry no token.

Modes (`--auth`): `none`, every caller is LOCAL_OPERATOR (one person on one machine: the
platform as it was); `tokens`, a bearer token (metadata `authorization: Bearer <token>`) or a
verified client certificate whose subject CN an operator mapped to a team."""

from __future__ import annotations

import os
import secrets
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import grpc

from irforge.accounts import audit
from irforge.accounts.authenticate import MODES, NO_CREDENTIAL, NONE, TOKENS, bearer_token, from_certificate, from_token
from irforge.accounts.identity import LOCAL_OPERATOR, Identity, Unauthenticated, acting_as
from irforge.accounts.store import STATE_FILE, TOKEN_PREFIX, AccountsStore
from irforge.common.grpc_errors import abort
from irforge.common.grpc_server import ServiceBinding

OPERATOR_TOKEN_FILE = "operator.token"
BOOTSTRAP_OPERATOR = "admin"
MIN_TOKEN_CHARS = 32
AUTHORIZATION = "authorization"
_OPEN_SERVICES = "/grpc."     # grpc.health.v1.Health, grpc.reflection...


class CallerCheck(grpc.ServerInterceptor):
    def __init__(self, mode: str, store: AccountsStore):
        if mode not in MODES:
            raise ValueError(f"--auth {mode!r}: choose one of {', '.join(MODES)}")
        self.mode = mode
        self.store = store

    def resolve(self, header: str | None, servicer_context: grpc.ServicerContext) -> Identity:
        if self.mode == NONE:
            return LOCAL_OPERATOR
        token = bearer_token(header)
        if token is not None:
            return from_token(self.store, token)
        names = (servicer_context.auth_context() or {}).get("x509_common_name") or []
        if names:   # present only when the server verified the certificate against its client CA
            return from_certificate(self.store, names[0].decode("utf-8", errors="replace"))
        raise Unauthenticated(NO_CREDENTIAL)

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith(_OPEN_SERVICES):
            return handler
        header = next((value for key, value in handler_call_details.invocation_metadata or ()
                       if key.lower() == AUTHORIZATION and isinstance(value, str)), None)
        serialization = {"request_deserializer": handler.request_deserializer,
                         "response_serializer": handler.response_serializer}
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(self._single(handler.unary_unary, header), **serialization)
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(self._single(handler.stream_unary, header), **serialization)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(self._stream(handler.unary_stream, header), **serialization)
        return grpc.stream_stream_rpc_method_handler(self._stream(handler.stream_stream, header), **serialization)

    def _caller(self, header, servicer_context) -> Identity:
        try:
            return self.resolve(header, servicer_context)
        except Unauthenticated as error:
            abort(servicer_context, error)   # raises: the servicer never runs

    def _single(self, behavior, header):
        def handle(request, servicer_context):
            with acting_as(self._caller(header, servicer_context)):
                return behavior(request, servicer_context)
        return handle

    def _stream(self, behavior, header):
        def handle(request, servicer_context):
            identity = self._caller(header, servicer_context)   # before the stream: a refusal ends the call at once
            return _bound(identity, behavior, request, servicer_context)
        return handle


def _bound(identity: Identity, behavior, request, servicer_context):
    # Each step of the stream runs in the call's context (common.grpc_interceptors), so the
    # identity set here holds between yields too, and is reset when the stream ends.
    with acting_as(identity):
        yield from behavior(request, servicer_context)


@dataclass
class FrontDoor:
    store: AccountsStore
    check: CallerCheck
    binding: ServiceBinding
    notice: str            # what the operator should know at start (where the bootstrap token is)


def open_front_door(state_dir: Path, mode: str, stack: ExitStack, operator_token_file: Path | None = None) -> FrontDoor:
    """The process's accounts store (the audit log attached), its caller check and Accounts service;
    with `tokens`, the first operator's token (bootstrap_operator)."""
    from irforge.accounts.server import binding

    state_dir = Path(state_dir)
    store = AccountsStore(state_dir / STATE_FILE)
    stack.callback(store.close)
    check = CallerCheck(mode, store)
    audit.attach(store)
    stack.callback(audit.attach, None)
    notice = bootstrap_operator(store, operator_token_file or state_dir / OPERATOR_TOKEN_FILE) if mode == TOKENS else ""
    return FrontDoor(store, check, binding(store), notice)


def bootstrap_operator(store: AccountsStore, path: Path) -> str:
    """Make sure an operator can get in: a token in `path` (a deployment's Secret, or one written
    earlier) is registered as the operator's if it is new; with no file and no operator token yet,
    a new one is written there, readable by this user only (0600). Returns what to tell the operator."""
    path = Path(path)
    if path.is_file():
        token = path.read_text(encoding="utf-8").strip()
        if len(token) < MIN_TOKEN_CHARS or not token.isprintable() or " " in token:
            raise ValueError(f"operator token file {path}: expected one token of at least {MIN_TOKEN_CHARS} "
                             "printable characters without spaces")
        if not store.knows_token(token):
            store.add_operator_token(BOOTSTRAP_OPERATOR, token)
        return f"operator token in {path}"
    if store.has_operator_token():
        return f"operator token: {path} is gone; an operator token issued earlier still works"
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    write_private(path, token + "\n")
    store.add_operator_token(BOOTSTRAP_OPERATOR, token)
    return f"operator token written to {path} (mode 0600; IRFORGE_TOKEN=$(cat {path}) irforge whoami)"


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` as one step, never readable by others, even for a moment."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
