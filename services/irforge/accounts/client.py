"""An Accounts client over gRPC (the admin commands, whoami), raising the server's error types
(Unauthenticated, Forbidden, TeamNotFound, ...)."""

from __future__ import annotations

import grpc

from irforge.accounts import errors as _errors  # noqa: F401 - registers the types the server raises, to rebuild them
from irforge.accounts.store import AuditRow
from irforge.common.grpc_errors import raise_from_rpc
from irforge.common.grpc_server import open_channel
from irforge.v1 import accounts_pb2, accounts_pb2_grpc


class AccountsClient:
    def __init__(self, address: str, token: str | None = None, timeout: float = 30.0):
        self.address = address
        self.timeout = timeout
        self._channel = open_channel(address, channel="orchestrator", token=token)
        self._stub = accounts_pb2_grpc.AccountsStub(self._channel)

    def _call(self, method: str, request):
        try:
            return getattr(self._stub, method)(request, timeout=self.timeout)
        except grpc.RpcError as error:
            raise_from_rpc(error, self.address, channel="orchestrator")

    def create_team(self, name: str, daily_submission_limit: int | None = None) -> accounts_pb2.IssuedToken:
        return self._call("CreateTeam", accounts_pb2.CreateTeamRequest(name=name, daily_submission_limit=daily_submission_limit or 0))

    def issue_token(self, team: str) -> accounts_pb2.IssuedToken:
        return self._call("IssueToken", accounts_pb2.TeamRef(name=team))

    def revoke(self, team: str, token_id: str = "") -> list[str]:
        return list(self._call("RevokeToken", accounts_pb2.RevokeTokenRequest(team=team, token_id=token_id)).token_ids)

    def teams(self) -> list[accounts_pb2.Team]:
        return list(self._call("ListTeams", accounts_pb2.ListTeamsRequest()).teams)

    def set_limit(self, team: str, daily_submission_limit: int | None) -> accounts_pb2.Team:
        return self._call("SetTeamLimit", accounts_pb2.SetTeamLimitRequest(name=team, daily_submission_limit=daily_submission_limit or 0))

    def map_certificate(self, team: str, common_name: str) -> accounts_pb2.Team:
        return self._call("MapCertificate", accounts_pb2.MapCertificateRequest(team=team, common_name=common_name))

    def whoami(self) -> accounts_pb2.Caller:
        return self._call("Whoami", accounts_pb2.WhoamiRequest())

    def audit(self, limit: int = 100, who: str = "", action: str = "") -> list[AuditRow]:
        reply = self._call("AuditLog", accounts_pb2.AuditLogRequest(limit=limit, who=who, action=action))
        return [AuditRow(r.sequence, r.time, r.who, r.role, r.via, r.action, r.target, r.outcome, r.detail) for r in reply.rows]

    def close(self) -> None:
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
