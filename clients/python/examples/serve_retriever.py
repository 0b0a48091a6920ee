"""A team's retriever served over gRPC for irforge to evaluate — the whole integration.

    python clients/python/examples/serve_retriever.py --port 50070
    # endpoint spec (search.yaml):  kind: search-grpc
    #                               url: 127.0.0.1:50070
    irforge eval --dataset ../shared/data/beir/scifact --endpoint search.yaml --out runs/team

The "retrieval" here is a word-overlap toy over the SciFact corpus; put your own index behind
`search()`.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import threading
from collections import Counter, defaultdict

from irforge_client import serve_retriever

WORD = re.compile(r"\w\w+")


def build_index(corpus_path: str) -> dict[str, Counter]:
    postings: dict[str, Counter] = defaultdict(Counter)
    with open(corpus_path) as lines:
        for line in lines:
            document = json.loads(line)
            for word in WORD.findall(f"{document.get('title', '')} {document.get('text', '')}".lower()):
                postings[word][document["_id"]] += 1
    return postings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default="../shared/data/beir/scifact/corpus.jsonl")
    parser.add_argument("--port", type=int, default=50070)
    args = parser.parse_args()
    postings = build_index(args.corpus)

    def search(query_id: str, query: str, k: int) -> list[tuple[str, float]]:
        scores: Counter = Counter()
        for word in set(WORD.findall(query.lower())):
            for doc_id, count in postings.get(word, {}).items():
                scores[doc_id] += count / (1 + len(postings[word]))
        return [(doc_id, float(score)) for doc_id, score in scores.most_common(k)]

    server = serve_retriever(search, port=args.port)
    print(f"retriever listening on 127.0.0.1:{server.port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
