"""A hand-made InfoSearch-layout collection and a search endpoint that answers it from a script,
so an end-to-end run's metrics can be compared with values computed by hand.

The endpoint tells the modes apart by the instruction it receives as its own field (as a team's
instruction-following search API would); it records every request, so tests can check that the
query arrives without the instruction appended.
"""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

QUERIES = [
    {"_id": "q1", "text": "alpha", "instruction_og": "", "instruction_changed": "documents mentioning one",
     "instruction_reversed": "documents not mentioning one"},
    {"_id": "q2", "text": "beta", "instruction_og": "", "instruction_changed": "documents mentioning two",
     "instruction_reversed": "documents not mentioning two"},
]
# q1: gold d1 (relevant in og and changed), d2 relevant in og only. q2: gold d4 and d5, d6 in og only.
QRELS = {
    "og": [("q1", "d1", 1), ("q1", "d2", 1), ("q2", "d4", 1), ("q2", "d5", 1), ("q2", "d6", 1)],
    "changed": [("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d4", 1), ("q2", "d5", 1), ("q2", "d6", 0)],
    "reversed": [("q1", "d1", 0), ("q1", "d2", 1), ("q2", "d4", 0), ("q2", "d5", 0), ("q2", "d6", 1)],
}
# (query id, mode) -> the scripted answer, best first.
RANKINGS = {
    ("q1", "og"): [("d2", 3.0), ("d1", 2.0), ("d3", 1.0)],
    ("q1", "changed"): [("d1", 5.0), ("d3", 4.0), ("d2", 1.0)],
    ("q1", "reversed"): [("d2", 4.0), ("d3", 3.0), ("d1", 1.0)],
    ("q2", "og"): [("d6", 0.9), ("d4", 0.8), ("d5", 0.7), ("d1", 0.1)],
    ("q2", "changed"): [("d5", 0.95), ("d6", 0.85), ("d1", 0.5)],           # d4 missing: rank 4, score 0
    ("q2", "reversed"): [("d6", 0.9), ("d4", 0.2), ("d1", 0.1)],            # d5 missing: rank 4, score 0
}

# By hand, from the rankings above (ranks R, scores S; K = 20; N = documents relevant in og):
#  q1 gold d1: R_ori 2, R_ins 1, R_rev 3, N 2 -> WISE reward 1 (R_ori <= N, R_ins = 1);
#     SICR: 1 < 2, 5.0 > 2.0, 2 < 3, 2.0 > 1.0 -> compliant: 1.
#     p-MRR over d2: o 1, n 3 -> moved down: 1 - 1/3.
#  q2 gold d4: R_ori 2, R_ins 4 (missing), R_rev 2 -> penalty (R_ori - R_ins)/R_ins = (2 - 4)/4 = -0.5; not compliant.
#     gold d5: R_ori 3, R_ins 1, R_rev 4 (missing), N 3 -> reward 1; SICR: 1 < 3, .95 > .7, 3 < 4, .7 > 0 -> compliant.
#     WISE = (-0.5 + 1)/2 = 0.25; SICR = 1/2. p-MRR over d6: o 1, n 2 -> 1 - 1/2.
#  nDCG@10: every mode ranks its relevant documents first except q2 changed: d5 at 1, d4 missing:
#     DCG 1, IDCG 1 + 1/log2(3) -> 1/(1 + 1/log2 3).
Q2_CHANGED_NDCG = 1 / (1 + 1 / math.log2(3))
EXPECTED = {
    "nDCG@10[og]": 1.0,
    "nDCG@10[changed]": (1.0 + Q2_CHANGED_NDCG) / 2,
    "nDCG@10[reversed]": 1.0,
    "p-MRR": ((1 - 1 / 3) + (1 - 1 / 2)) / 2,
    "p-MRR[InfoSearch]": ((1 - 1 / 3) + (1 - 1 / 2)) / 2,
    "WISE": (1.0 + 0.25) / 2,
    "SICR": (1.0 + 0.5) / 2,
}
EXPECTED_PER_QUERY = {
    "q1": {"WISE": 1.0, "SICR": 1.0, "p-MRR": 1 - 1 / 3, "nDCG@10[changed]": 1.0},
    "q2": {"WISE": 0.25, "SICR": 0.5, "p-MRR": 1 - 1 / 2, "nDCG@10[changed]": Q2_CHANGED_NDCG},
}


def write_collection(folder: Path, modes=("og", "changed", "reversed")) -> Path:
    """The collection above in the InfoSearch layout (FollowIR's when `modes` has no "reversed")."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w") as handle:
        for n in range(1, 7):
            handle.write(json.dumps({"_id": f"d{n}", "title": f"doc {n}", "text": f"text of document {n}"}) + "\n")
    with open(folder / "queries.jsonl", "w") as handle:
        for query in QUERIES:
            handle.write(json.dumps({k: v for k, v in query.items()
                                     if not k.startswith("instruction_") or k.removeprefix("instruction_") in modes}) + "\n")
    for mode in modes:
        (folder / f"qrels_{mode}").mkdir(exist_ok=True)
        lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{s}" for q, d, s in QRELS[mode])]
        (folder / f"qrels_{mode}" / "test.tsv").write_text("\n".join(lines) + "\n")
    return folder


def mode_of(query_id: str, instruction: str | None) -> str:
    query = next(q for q in QUERIES if q["_id"] == query_id)
    return next(mode for mode in ("og", "changed", "reversed") if query[f"instruction_{mode}"] == instruction)


class ScriptedSearchServer:
    """search-http on 127.0.0.1: answers RANKINGS by (query id, the mode its instruction names)."""

    def __init__(self):
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                if body["query_id"] == "irforge-probe":
                    hits = [{"id": "d1", "score": 1.0}]
                else:
                    ranking = RANKINGS[(body["query_id"], mode_of(body["query_id"], body.get("instruction")))]
                    hits = [{"id": doc, "score": score} for doc, score in ranking[:body["k"]]]
                data = json.dumps({"hits": hits}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/search"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def scripted_grpc_search(query_id: str, query: str, k: int, instruction: str | None = None):
    """The same script as a `serve_retriever` function (the SDK passes the instruction by keyword)."""
    if query_id == "irforge-probe":
        return [("d1", 1.0)]
    return RANKINGS[(query_id, mode_of(query_id, instruction))][:k]
