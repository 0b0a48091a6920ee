"""The Accounts gRPC service (protos/irforge/v1/accounts.proto), hosted by the orchestrator's
process: operators manage teams, tokens, certificate names and read the audit log; anyone asks
Whoami. The caller is already bound (front_door.CallerCheck); every change is audited."""

from __future__ import annotations

from irforge.accounts import audit
from irforge.accounts.identity import current_identity, require_operator
from irforge.accounts.store import AccountsStore, Team, token_hash, TOKEN_ID_CHARS
from irforge.common.grpc_errors import grpc_method
from irforge.common.grpc_server import ServiceBinding
from irforge.v1 import accounts_pb2, accounts_pb2_grpc

SERVICE_NAME = accounts_pb2.DESCRIPTOR.services_by_name["Accounts"].full_name  # "irforge.v1.Accounts"


def team_to_proto(team: Team) -> accounts_pb2.Team:
    return accounts_pb2.Team(name=team.name, daily_submission_limit=team.daily_submission_limit or 0,
                             created=team.created, disabled=team.disabled, token_ids=team.token_ids,
                             certificate_names=team.certificate_names)


def _issued(team: str, token: str) -> accounts_pb2.IssuedToken:
    return accounts_pb2.IssuedToken(team=team, token=token, token_id=token_hash(token)[:TOKEN_ID_CHARS])


class AccountsServicer(accounts_pb2_grpc.AccountsServicer):
    def __init__(self, store: AccountsStore):
        self.store = store

    @grpc_method
    def CreateTeam(self, request, context):
        with audit.audited("team.add", request.name):
            require_operator("adding a team")
            token = self.store.create_team(request.name, request.daily_submission_limit or None)
        return _issued(request.name, token)

    @grpc_method
    def IssueToken(self, request, context):
        with audit.audited("token.issue", request.name) as row:
            require_operator("issuing a token")
            token = self.store.issue_token(request.name)
            row.detail = f"token {token_hash(token)[:TOKEN_ID_CHARS]}"
        return _issued(request.name, token)

    @grpc_method
    def RevokeToken(self, request, context):
        with audit.audited("token.revoke", request.team) as row:
            require_operator("revoking a token")
            revoked = self.store.revoke(request.team, request.token_id)
            row.detail = f"tokens {', '.join(revoked) or 'none'}"
        return accounts_pb2.RevokeTokenResponse(token_ids=revoked)

    @grpc_method
    def ListTeams(self, request, context):
        require_operator("listing teams")
        return accounts_pb2.ListTeamsResponse(teams=[team_to_proto(team) for team in self.store.teams()])

    @grpc_method
    def SetTeamLimit(self, request, context):
        limit = request.daily_submission_limit or None
        with audit.audited("team.limit", request.name, detail=f"daily submission limit {limit or 'platform default'}"):
            require_operator("setting a team's limit")
            return team_to_proto(self.store.set_limit(request.name, limit))

    @grpc_method
    def MapCertificate(self, request, context):
        with audit.audited("team.cert", request.team, detail=f"certificate CN {request.common_name!r}"):
            require_operator("mapping a certificate")
            return team_to_proto(self.store.map_certificate(request.common_name, request.team))

    @grpc_method
    def Whoami(self, request, context):
        who = current_identity()
        return accounts_pb2.Caller(name=who.name, role=who.role, via=who.via)

    @grpc_method
    def AuditLog(self, request, context):
        require_operator("reading the audit log")
        rows = self.store.audit(request.limit or 100, who=request.who, action=request.action)
        return accounts_pb2.AuditLogResponse(rows=[accounts_pb2.AuditRow(**vars(row)) for row in rows])


def binding(store: AccountsStore) -> ServiceBinding:
    return ServiceBinding(SERVICE_NAME, accounts_pb2_grpc.add_AccountsServicer_to_server, AccountsServicer(store))
