"""`irforge admin team ...`, `irforge admin audit`, `irforge whoami`: the platform's accounts, over
the orchestrator's Accounts service (operators only, but whoami). A new token is printed once, on
stdout alone (so `TOKEN=$(irforge admin team add NAME)` keeps it out of the terminal), or written
to a file only its owner reads (--save)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irforge.cli.caller import add_caller_arguments, token_from
from irforge.common.extras import require_extra


def add_parsers(subparsers) -> None:
    admin = subparsers.add_parser("admin", help="operators: teams, their tokens and limits, the audit log",
                                  description="Manage who may use the platform (docs/accounts.md). Every command "
                                  "calls the orchestrator as the operator whose token --token-env names.")
    commands = admin.add_subparsers(dest="admin_command", required=True, metavar="WHAT")
    from irforge.cli import leaderboard_cmd

    leaderboard_cmd.add_admin_parsers(commands)   # `irforge admin dataset register`
    team = commands.add_parser("team", help="add, list, issue or revoke tokens, set limits, map certificates")
    actions = team.add_subparsers(dest="team_command", required=True, metavar="ACTION")

    add = actions.add_parser("add", help="add a team; prints its first token once")
    add.add_argument("name", help="1 to 64 letters, digits and . _ @ -")
    add.add_argument("--limit", type=int, help="its submissions per UTC day (default: the platform's)")
    _add_save(add)
    add.set_defaults(handler=run_team_add)

    listing = actions.add_parser("list", help="every team: its limit, active token ids, certificate names")
    listing.set_defaults(handler=run_team_list)

    token = actions.add_parser("token", help="issue another token for a team (its others stay valid); prints it once")
    token.add_argument("name", help="the team")
    _add_save(token)
    token.set_defaults(handler=run_team_token)

    revoke = actions.add_parser("revoke", help="revoke a team's token (--token-id), or all its tokens")
    revoke.add_argument("name", help="the team")
    revoke.add_argument("--token-id", default="", help="the token's id (`irforge admin team list`); none: every token")
    revoke.set_defaults(handler=run_team_revoke)

    limit = actions.add_parser("limit", help="set a team's daily submission limit")
    limit.add_argument("name", help="the team")
    limit.add_argument("limit", help="submissions per UTC day, or 'default' (the platform's)")
    limit.set_defaults(handler=run_team_limit)

    cert = actions.add_parser("cert", help="clients whose certificate subject CN is CN act as the team (mutual TLS)")
    cert.add_argument("name", help="the team")
    cert.add_argument("common_name", metavar="CN", help="the subject common name of the team's client certificates")
    cert.set_defaults(handler=run_team_cert)

    audit = commands.add_parser("audit", help="the audit log, newest first")
    audit.add_argument("--limit", type=int, default=50, help="rows (default 50)")
    audit.add_argument("--who", default="", help="only this caller's rows")
    audit.add_argument("--action", default="", help="only this action's rows (submit, cancel, results, team.add, ...)")
    audit.set_defaults(handler=run_audit)

    for parser in (add, listing, token, revoke, limit, cert, audit):
        add_caller_arguments(parser)

    whoami = subparsers.add_parser("whoami", help="who the orchestrator takes you for (your token or certificate)")
    add_caller_arguments(whoami)
    whoami.set_defaults(handler=run_whoami)


def _add_save(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--save", type=Path, metavar="FILE",
                        help="write the token to FILE (mode 0600; refused if FILE exists) instead of printing it")


def _client(args):
    require_extra("platform", "grpc", f"irforge {args.command} (the accounts service's client)")
    from irforge.accounts.client import AccountsClient

    return AccountsClient(args.server, token=token_from(args))


def _show_token(args, issued) -> int:
    if args.save:
        from irforge.accounts.errors import AccountsError
        from irforge.accounts.front_door import write_private

        if args.save.exists():
            raise AccountsError(f"--save {args.save}: exists; give a new file (the token was issued as {issued.token_id}: "
                                f"revoke it with `irforge admin team revoke {issued.team} --token-id {issued.token_id}`)")
        write_private(args.save, issued.token + "\n")
        print(f"team {issued.team}: token {issued.token_id} written to {args.save} (mode 0600)", file=sys.stderr)
        return 0
    print(issued.token)
    print(f"team {issued.team}: token {issued.token_id} is shown this once (only its hash is kept); give it to the team, "
          "who set IRFORGE_TOKEN to it", file=sys.stderr)
    return 0


def run_team_add(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return _show_token(args, client.create_team(args.name, args.limit))


def run_team_token(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return _show_token(args, client.issue_token(args.name))


def run_team_list(args: argparse.Namespace) -> int:
    with _client(args) as client:
        teams = client.teams()
    for team in teams:
        limit = team.daily_submission_limit or "default"
        print(f"{team.name}  limit {limit}  tokens {', '.join(team.token_ids) or 'none'}"
              + (f"  certificates {', '.join(team.certificate_names)}" if team.certificate_names else "")
              + ("  disabled" if team.disabled else ""))
    return 0


def run_team_revoke(args: argparse.Namespace) -> int:
    with _client(args) as client:
        revoked = client.revoke(args.name, args.token_id)
    print(f"team {args.name}: revoked {', '.join(revoked) if revoked else 'nothing (it had no active token)'}")
    return 0


def run_team_limit(args: argparse.Namespace) -> int:
    from irforge.accounts.errors import AccountsError

    if args.limit == "default":
        limit = None
    elif args.limit.isdigit():
        limit = int(args.limit)
    else:
        raise AccountsError(f"limit {args.limit!r}: give a whole number of submissions per day, or 'default'")
    with _client(args) as client:
        team = client.set_limit(args.name, limit)
    print(f"team {team.name}: {team.daily_submission_limit or 'the platform default'} submissions per UTC day")
    return 0


def run_team_cert(args: argparse.Namespace) -> int:
    with _client(args) as client:
        team = client.map_certificate(args.name, args.common_name)
    print(f"team {team.name}: certificates {', '.join(team.certificate_names)}")
    return 0


def run_audit(args: argparse.Namespace) -> int:
    with _client(args) as client:
        rows = client.audit(args.limit, who=args.who, action=args.action)
    for row in rows:
        print(f"{row.time}  {row.who} ({row.role or '-'}, {row.via or '-'})  {row.action} {row.target}  {row.outcome}"
              + (f"  {row.detail}" if row.detail else ""))
    return 0


def run_whoami(args: argparse.Namespace) -> int:
    with _client(args) as client:
        caller = client.whoami()
    print(f"{caller.name} ({caller.role}, via {caller.via})")
    return 0
