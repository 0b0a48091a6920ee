"""The accounts room's errors, and how each travels over gRPC (irforge.common.grpc_errors): a
client rebuilds the same type, so `irforge whoami` without a token says UNAUTHENTICATED's message."""

from __future__ import annotations

from irforge.accounts.identity import Forbidden, Unauthenticated
from irforge.common.error_status import register_status


class AccountsError(ValueError):
    """A request the accounts store refuses (a bad team name, a limit out of range): names what."""


class TeamNotFound(LookupError):
    def __init__(self, name: str):
        super().__init__(f"no team {name!r} (list teams with `irforge admin team list`)")


class TeamExists(ValueError):
    def __init__(self, name: str):
        super().__init__(f"a team or operator named {name!r} exists already; choose another name")


class TokenNotFound(LookupError):
    def __init__(self, token_id: str):
        super().__init__(f"no active token {token_id!r} (`irforge admin team list` shows each team's token ids)")


register_status(Unauthenticated, "UNAUTHENTICATED")
register_status(Forbidden, "PERMISSION_DENIED")
register_status(AccountsError, "INVALID_ARGUMENT")
register_status(TeamNotFound, "NOT_FOUND")
register_status(TeamExists, "ALREADY_EXISTS")
register_status(TokenNotFound, "NOT_FOUND")

# What a command line reports as the user's to fix (cli/main.py: exit 2, no traceback).
USER_ERRORS = (Unauthenticated, Forbidden, AccountsError, TeamNotFound, TeamExists, TokenNotFound)
