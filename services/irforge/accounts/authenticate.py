"""Who a credential stands for: a token, a client certificate's common name, or the user and groups
an Ingress's OIDC proxy (oauth2-proxy) put in a header. Each front door (the gRPC server, the web
page) calls these and binds the answer with identity.acting_as; none of them imports gRPC.
Every refusal raises Unauthenticated with a message that names what was wrong, never the token."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from irforge.accounts.identity import OPERATOR, TEAM, Identity, Unauthenticated
from irforge.accounts.store import AccountsStore, bounded

# `--auth`: none, every caller is the local operator (one person's machine); tokens, a token or a
# client certificate mapped to a team (irforge.accounts.front_door).
NONE, TOKENS = "none", "tokens"
MODES = (NONE, TOKENS)
BEARER = "bearer "
# What a caller reads when it sent nothing: how to send a token (the same for every front door).
NO_CREDENTIAL = ("no credential: this platform requires a token (set IRFORGE_TOKEN, or name the variable that "
                 "holds it with --token-env) or a client certificate mapped to a team")


def bearer_token(header: str | None) -> str | None:
    """The token of an `authorization: Bearer <token>` value; None when there is no such header."""
    if not header:
        return None
    if not header[:len(BEARER)].lower() == BEARER or not header[len(BEARER):].strip():
        raise Unauthenticated("the authorization header is not 'Bearer <token>'")
    return header[len(BEARER):].strip()


def from_token(store: AccountsStore, token: str) -> Identity:
    holder = store.holder_of(token)
    if holder is None:
        # One message for unknown and revoked tokens alike: the caller learns nothing about which.
        raise Unauthenticated("the token is not valid (unknown, or revoked by an operator); ask an operator for a new one")
    return Identity(holder.name, holder.role, "token")


def from_certificate(store: AccountsStore, common_name: str) -> Identity:
    """The team a verified client certificate's subject CN is mapped to (`irforge admin team cert`)."""
    team = store.team_of_certificate(common_name) if common_name else None
    if team is None:
        raise Unauthenticated(f"the client certificate's common name {bounded(repr(common_name), 80)} is not mapped to "
                              "a team (an operator maps it with `irforge admin team cert TEAM CN`)")
    return Identity(team, TEAM, "mtls")


@dataclass(frozen=True)
class ProxyMapping:
    """Who the users and groups an OIDC proxy names are, read from a YAML file the operator writes:

        users: {alice@example.org: team-a}       # user (email or name) -> team
        groups: {irforge-team-b: team-b}         # any of the user's groups -> team
        operators: [ops@example.org]             # users who act as operators

    A user both listed and in a mapped group acts as the `users` entry says."""

    users: dict[str, str] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    operators: frozenset[str] = frozenset()

    @classmethod
    def load(cls, path: str | Path) -> ProxyMapping:
        import yaml

        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as error:
            raise ValueError(f"proxy mapping {path}: cannot read it ({error})") from None
        if not isinstance(data, dict) or set(data) - {"users", "groups", "operators"}:
            raise ValueError(f"proxy mapping {path}: expected a mapping with users, groups and operators only")
        users, groups, operators = data.get("users") or {}, data.get("groups") or {}, data.get("operators") or []
        if not isinstance(users, dict) or not isinstance(groups, dict) or not isinstance(operators, list):
            raise ValueError(f"proxy mapping {path}: users and groups are mappings (name: team), operators a list")
        return cls({str(k): str(v) for k, v in users.items()}, {str(k): str(v) for k, v in groups.items()},
                   frozenset(str(o) for o in operators))


def from_proxy_header(mapping: ProxyMapping, user: str | None, groups: str | None = None,
                      store: AccountsStore | None = None) -> Identity:
    """The identity of the user (and comma-separated groups) an OIDC proxy vouched for. Call it
    only when the operator said the header is trusted (the proxy strips what a client sends)."""
    user = (user or "").strip()
    if not user:
        raise Unauthenticated("no user header from the sign-in proxy")
    if user in mapping.operators:
        return Identity(user, OPERATOR, "proxy")
    team = mapping.users.get(user)
    if team is None:
        team = next((mapping.groups[g] for g in (g.strip() for g in (groups or "").split(",")) if g in mapping.groups), None)
    if team is None:
        raise Unauthenticated(f"user {bounded(repr(user), 80)} is not mapped to a team (ask an operator)")
    if store is not None:
        known = {t.name: t for t in store.teams()}
        if team not in known or known[team].disabled:
            raise Unauthenticated(f"user {bounded(repr(user), 80)} is mapped to team {team!r}, which does not exist")
    return Identity(team, TEAM, "proxy")
