"""`irforge service NAME`: run one service (or all of them in one process) as a gRPC server."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from contextlib import ExitStack
from pathlib import Path

from irforge.cli.service_flags import add_observability_arguments, add_orchestrator_arguments, orchestrator_settings
from irforge.cli.options import add_config_options, section_from_args
from irforge.common.extras import require_extra
from irforge.config import PipelineConfig
from irforge.common.tls import SERVER_VARIABLES, ServerTls
from irforge.corpus.lexical import BACKENDS
from irforge.corpus.stream_limits import DEFAULT_INGEST_IDLE_TIMEOUT_S, DEFAULT_MAX_INGEST_STREAMS

SERVICES = ("corpus", "evaluator", "models", "judge", "orchestrator", "all")
# The platform's port convention (irforge serve, the Helm chart): one well-known port per role.
DEFAULT_WORKERS = 16
LOOPBACK = ("127.0.0.1", "localhost", "::1")
PARENT_PID_VARIABLE = "IRFORGE_PARENT_PID"  # set by `irforge serve` for the services it starts
# The vectors and stores options that are not the corpus service's vector store (its --index-dir
# and --elasticsearch-url are its own, above; it searches what clients ask, exactly or by HNSW).
NOT_VECTOR_STORE = ("search", "hnsw_m", "hnsw_ef_construct", "hnsw_ef", "recall_queries", "target_recall", "index_dir",
                    "embedding_cache", "elasticsearch_url")
DEFAULT_PORTS = {"orchestrator": 50050, "corpus": 50051, "evaluator": 50052, "models": 50053, "judge": 50054, "all": 50051}


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "service", help="run a service as a gRPC server (health checking and reflection included)",
        description="Serve the corpus service, the evaluator, the models (Encoder) service, or all of them "
        "('all'; models only when --model is given) over gRPC until Ctrl-C or SIGTERM.",
    )
    parser.add_argument("name", choices=SERVICES, help="which service: " + ", ".join(SERVICES))
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback only)")
    parser.add_argument("--port", type=int, help="port (0 picks a free one; the chosen port is printed; default: "
                        + ", ".join(f"{name} {port}" for name, port in DEFAULT_PORTS.items()) + ")")
    parser.add_argument("--backend", choices=BACKENDS, default="embedded", help="lexical backend of the corpus service")
    parser.add_argument("--index-dir", type=Path, help="embedded indexes (default $IRFORGE_INDEX_DIR or the user data dir)")
    parser.add_argument("--elasticsearch-url", help="Elasticsearch URL (default $IRFORGE_ELASTICSEARCH_URL)")
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS,
                        help=f"request-handling threads; every open stream holds one (default {DEFAULT_WORKERS})")
    parser.add_argument("--max-ingest-streams", type=int, default=DEFAULT_MAX_INGEST_STREAMS,
                        help="corpus service: Ingest streams open at once; more are refused with RESOURCE_EXHAUSTED, so "
                             f"health checks and unary calls always find a thread (default {DEFAULT_MAX_INGEST_STREAMS}, "
                             "below --workers)")
    parser.add_argument("--ingest-idle-timeout", type=float, default=DEFAULT_INGEST_IDLE_TIMEOUT_S, metavar="SECONDS",
                        help="corpus service: cancel an Ingest stream whose client sent nothing for this long; nothing "
                             f"of it is committed (default {DEFAULT_INGEST_IDLE_TIMEOUT_S:g})")
    parser.add_argument("--judge", default="embedded", help="judge service: 'embedded' or a judge spec YAML (default embedded)")
    parser.add_argument("--store", type=Path, help="judge service: judgement store (default $IRFORGE_JUDGE_STORE or the user data dir)")
    add_observability_arguments(parser)
    tls = parser.add_argument_group("TLS (this server)")
    tls.add_argument("--tls-cert", metavar="PEM", default=os.environ.get(SERVER_VARIABLES["cert"]),
                     help=f"serve TLS only, with this certificate (chain) (default ${SERVER_VARIABLES['cert']}; none: plaintext)")
    tls.add_argument("--tls-key", metavar="PEM", default=os.environ.get(SERVER_VARIABLES["key"]),
                     help=f"the certificate's private key (default ${SERVER_VARIABLES['key']})")
    tls.add_argument("--tls-client-ca", metavar="PEM", default=os.environ.get(SERVER_VARIABLES["client_ca"]),
                     help="mutual TLS: accept only clients whose certificate chains to this CA "
                          f"(default ${SERVER_VARIABLES['client_ca']})")
    add_config_options(parser, PipelineConfig, sections=("vectors", "stores"), exclude=NOT_VECTOR_STORE)
    add_config_options(parser, PipelineConfig, sections=("encoder",))
    parser.add_argument("--sparse", action="store_true",
                        help="models service: serve --model as a sentence-transformers SparseEncoder (SPLADE), for "
                             "--retriever sparse; --max-active-dims applies")
    add_orchestrator_arguments(parser)
    parser.set_defaults(handler=run_service, model=None)


def build_bindings(args: argparse.Namespace, stack: ExitStack, interceptors: list | None = None,
                   cores: dict | None = None) -> list:
    """The services `args` ask for; `interceptors` gets the server-wide ones they need (the
    orchestrator's caller check); `cores` the core objects the web page in the same process uses."""
    bindings = []
    cores = {} if cores is None else cores
    if args.name in ("corpus", "all"):
        from irforge.corpus import server as corpus_server
        from irforge.corpus.core import CorpusService
        from irforge.corpus.lexical import make_backend

        backend = make_backend(args.backend, index_dir=args.index_dir, elasticsearch_url=args.elasticsearch_url)
        if not 1 <= args.max_ingest_streams < args.workers:
            raise ValueError(f"--max-ingest-streams must be at least 1 and below --workers ({args.workers}), "
                             f"so other calls keep a thread; got {args.max_ingest_streams}")
        bindings.append(corpus_server.binding(
            CorpusService(backend, corpus_vectors(args)),
            max_ingest_streams=args.max_ingest_streams, ingest_idle_timeout_s=args.ingest_idle_timeout,
        ))
    if args.name in ("evaluator", "all"):
        from irforge.evaluator import server as evaluator_server
        from irforge.evaluator.core import Evaluator

        bindings.append(evaluator_server.binding(Evaluator()))
    if args.name == "models" or (args.name == "all" and args.model):
        from irforge.models import server as models_server

        from irforge.builder.pipeline import encoder_spec, local_encoder
        from irforge.config.pipeline import EncoderConfig

        settings = section_from_args(args, EncoderConfig)   # no --model: the default model
        if settings.max_active_dims is not None and not args.sparse:
            raise ValueError("--max-active-dims applies to a sparse model: add --sparse")
        if settings.backend != "torch" and args.sparse:
            raise ValueError(f"--encoder-backend {settings.backend} applies to a dense model only (not --sparse)")
        encoder, _ = local_encoder(encoder_spec(settings), settings.ray, stack, args.sparse, settings.max_active_dims)
        bindings.append(models_server.binding({encoder.identity["model"]: encoder}))
    if args.name == "judge":
        from irforge.judge import server as judge_server
        from irforge.judge.factory import open_judge

        bindings.append(judge_server.binding(stack.enter_context(open_judge(args.judge, args.store))))
    if args.name == "orchestrator":
        from irforge.accounts.front_door import open_front_door
        from irforge.leaderboard import server as leaderboard_server
        from irforge.orchestrator import server as orchestrator_server
        from irforge.orchestrator.config import default_state_dir, start_orchestrator

        settings = orchestrator_settings(args)
        door = open_front_door(settings.state_dir or default_state_dir(), args.auth, stack, args.operator_token_file)
        if door.notice:
            print(f"irforge orchestrator: {door.notice}", flush=True)
        if interceptors is not None:
            interceptors.append(door.check)
        orchestrator = start_orchestrator(settings, stack)
        leaderboard = start_leaderboard(orchestrator, door.store, args, stack)
        cores.update(orchestrator=orchestrator, accounts=door.store, auth=args.auth, leaderboard=leaderboard)
        bindings += [orchestrator_server.binding(orchestrator, leaderboard.disclosure), door.binding,
                     leaderboard_server.binding(leaderboard)]
    return bindings


def start_web_page(args: argparse.Namespace, cores: dict, stack: ExitStack):
    """The web page beside the orchestrator's gRPC server, on its host and TLS certificate; None without --web-port."""
    if getattr(args, "web_port", None) is None:
        return None
    if "orchestrator" not in cores:
        raise ValueError("--web-port: only the orchestrator serves the web page (irforge service orchestrator --web-port PORT)")
    from irforge.web.app import create_app
    from irforge.web.server import start_web

    authenticate = None
    if cores.get("auth") == "tokens":   # the same accounts store the gRPC door checks tokens against
        from irforge.accounts.authenticate import from_token

        accounts = cores["accounts"]
        authenticate = lambda token: from_token(accounts, token)   # noqa: E731
    app = create_app(cores["orchestrator"], leaderboard=cores.get("leaderboard"), authenticate=authenticate,
                     proxy_identity=web_proxy_identity(args, cores.get("accounts")))
    running = start_web(app, args.host, args.web_port, tls_cert=args.tls_cert, tls_key=args.tls_key)
    stack.callback(running.stop)
    if authenticate is None and args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"irforge orchestrator: warning: the web page on {args.host} runs with --auth none: everyone who reaches "
              "it acts as the operator (use --auth tokens on a shared network)", file=sys.stderr, flush=True)
    return running


def web_proxy_identity(args: argparse.Namespace, accounts):
    """The identity an OIDC proxy's headers name (accounts.authenticate.from_proxy_header), when the
    operator trusts --web-proxy-user-header; None otherwise. A request without the header falls
    back to the page's own token login."""
    header = getattr(args, "web_proxy_user_header", None)
    if not header:
        return None
    if args.web_proxy_mapping is None:
        raise ValueError("--web-proxy-user-header needs --web-proxy-mapping (the users and groups of each team)")
    if getattr(args, "auth", "none") != "tokens":
        raise ValueError("--web-proxy-user-header: run with --auth tokens (with --auth none every caller is the operator)")
    from irforge.accounts.authenticate import ProxyMapping, from_proxy_header

    mapping = ProxyMapping.load(args.web_proxy_mapping)
    groups_header = args.web_proxy_groups_header

    def identity(headers):
        user = headers.get(header)
        return from_proxy_header(mapping, user, headers.get(groups_header), accounts) if user else None

    return identity


def start_leaderboard(orchestrator, accounts, args: argparse.Namespace, stack: ExitStack):
    """The leaderboard in the orchestrator's process (its Leaderboard service beside the
    Orchestrator, sharing the state dir), with its log scrubber on this process's log handlers.
    The accounts front door binds the caller of every call; a team's own daily limit comes
    from the accounts store, else --daily-submission-limit."""
    from irforge.accounts import audit
    from irforge.app.leaderboard import Leaderboard
    from irforge.leaderboard.disclosure import scrub_logs

    def team_limit(team: str) -> int | None:
        try:
            return accounts.team(team).daily_submission_limit
        except LookupError:   # an operator's name, or a team removed since: the platform's default
            return None

    leaderboard = Leaderboard(orchestrator, daily_limit=args.daily_submission_limit, team_limit=team_limit)
    stack.callback(leaderboard.close)
    scrub_logs(leaderboard.disclosure)
    audit.filter_details(leaderboard.disclosure.scrub_all)   # an audit row quoting a job's error: scrubbed too
    stack.callback(audit.filter_details, None)
    return leaderboard


def corpus_vectors(args: argparse.Namespace):
    """The corpus service's vector backend (--vector-backend embedded or qdrant) at its locations."""
    from irforge.builder.pipeline import vector_backend
    from irforge.config.pipeline import StoresConfig, VectorsConfig

    vectors = section_from_args(args, VectorsConfig)
    if vectors.backend not in ("embedded", "qdrant"):
        raise ValueError(f"--vector-backend {vectors.backend}: the corpus service keeps vectors embedded or in a Qdrant "
                         "server (--vector-backend embedded or qdrant)")
    return vector_backend(vectors.backend, section_from_args(args, StoresConfig), vectors.exact_precision)


def run_service(args: argparse.Namespace) -> int:
    require_extra("platform", "grpc", "irforge service")
    from irforge.common.grpc_server import PortUnavailable, start_server   # grpc: the platform extra's
    from irforge.common.observability import start_observability
    from irforge.orchestrator.store import StoreInUse

    with ExitStack() as stack:
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        parent = os.environ.get(PARENT_PID_VARIABLE)
        if parent:  # started by `irforge serve`: never outlive it, even if it was killed with -9
            die_with_parent()
            stop_when_parent_dies(int(parent), stop)
        start_observability(args.name, args.host, args.metrics_port, args.log_format, stack)
        try:
            tls = ServerTls.from_settings(args.tls_cert, args.tls_key, args.tls_client_ca)
            if args.name == "orchestrator" and args.auth != "none" and tls is None and args.host not in LOOPBACK:
                print(f"irforge {args.name} service: warning: --auth {args.auth} without TLS on {args.host}: tokens cross "
                      "the network readable by anyone on the path; serve TLS (--tls-cert, --tls-key; docs/security.md)",
                      file=sys.stderr, flush=True)
            interceptors: list = []
            cores: dict = {}
            bindings = build_bindings(args, stack, interceptors, cores)
            web = start_web_page(args, cores, stack)    # its port refused: nothing served at all
            running = start_server(bindings, host=args.host,
                                   port=DEFAULT_PORTS[args.name] if args.port is None else args.port, max_workers=args.workers,
                                   tls=tls, interceptors=tuple(interceptors))
        except (PortUnavailable, StoreInUse, ValueError) as error:
            print(f"irforge service {args.name}: error: {error}", file=sys.stderr, flush=True)
            return 2
        # Tests and scripts read this line to learn the port; keep its shape stable.
        print(f"irforge {args.name} service listening on {args.host}:{running.port}" + (" (TLS)" if tls else ""), flush=True)
        if web is not None:   # `irforge serve` reads this line for the URL it prints
            print(f"irforge web page at {web.url}", flush=True)
        stop.wait()
        print(f"irforge {args.name} service stopping", file=sys.stderr, flush=True)
        running.stop()
    return 0


def die_with_parent() -> None:
    """Linux sends this process SIGTERM when its parent dies, even by kill -9 (the service then
    stops cleanly, Ray included). Asked for here, after exec, rather than in a preexec_fn of the
    parent; a parent that died before this call is caught by stop_when_parent_dies."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def stop_when_parent_dies(parent_pid: int, stop: threading.Event, poll_s: float = 0.5) -> None:
    """Set `stop` once `parent_pid` is gone (this process is re-parented). `irforge serve` also asks
    Linux for SIGTERM on its death (die_with_parent); this poll covers other systems and the
    moment between fork and that request."""

    def watch():
        while not stop.wait(poll_s):
            if os.getppid() != parent_pid:
                print(f"irforge service: parent process {parent_pid} is gone; stopping", file=sys.stderr, flush=True)
                stop.set()
                return

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
