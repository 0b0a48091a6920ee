"""The bad-input corpus: one row per bad file, the same rows for every path that reads it.

A row is (name, the bad file's bytes, where the error must point, a fragment of its message).
`where` is "FILE:LINE", "FILE" (a whole-file problem) or "" (no one line is to blame: the message
names queries instead). Everything else in the dataset (or the other TREC file) is GOOD_*, so the
row's file is the only thing wrong. Adding a case is adding a row.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass

BOM = b"\xef\xbb\xbf"


def numbered(template: bytes, count: int) -> bytes:
    """`count` lines from a template holding one %d (ids d0, d1, ...): a long file in one row."""
    return b"".join(template % n for n in range(count))


def truncated_gzip(data: bytes) -> bytes:
    return gzip.compress(data)[:-12]


@dataclass(frozen=True)
class Case:
    name: str
    file: str            # the file replaced: a path in the dataset folder (BEIR), or the run or qrels file (TREC)
    data: bytes
    where: str           # FILE:LINE, FILE, or "" (see the module docstring)
    fragment: str

    def __str__(self) -> str:  # pytest ids
        return self.name


# -- BEIR collections (corpus.jsonl, queries.jsonl, qrels/test.tsv) -----------------------------

GOOD_BEIR = {
    "corpus.jsonl": b'{"_id": "d1", "title": "t", "text": "alpha beta"}\n{"_id": "d2", "text": "gamma delta"}\n',
    "queries.jsonl": b'{"_id": "q1", "text": "alpha"}\n{"_id": "q2", "text": "gamma"}\n',
    "qrels/test.tsv": b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n",
}
DOC = b'{"_id": "d1", "text": "alpha"}\n'

BEIR_CASES = [
    Case("corpus-malformed-json", "corpus.jsonl", DOC + b'{"_id": "d2", "text": \n', "corpus.jsonl:2", "malformed JSON"),
    Case("corpus-not-an-object", "corpus.jsonl", DOC + b'["d2", "text"]\n', "corpus.jsonl:2", "expected a JSON object per line, got list"),
    Case("corpus-no-id", "corpus.jsonl", DOC + b'{"text": "x"}\n', "corpus.jsonl:2", "document has no `_id`"),
    Case("corpus-duplicate-id", "corpus.jsonl", DOC + DOC, "corpus.jsonl:2", "duplicate document id 'd1' (first seen on line 1)"),
    Case("corpus-id-with-space", "corpus.jsonl", DOC + b'{"_id": "d 2", "text": "x"}\n', "corpus.jsonl:2", "`_id` 'd 2' contains whitespace"),
    Case("corpus-title-not-text", "corpus.jsonl", DOC + b'{"_id": "d2", "title": 7}\n', "corpus.jsonl:2", "`title` must be a string, got int"),
    Case("corpus-metadata-not-object", "corpus.jsonl", DOC + b'{"_id": "d2", "metadata": [1]}\n', "corpus.jsonl:2", "`metadata` must be an object, got list"),
    Case("corpus-surrogate-in-id", "corpus.jsonl", DOC + b'{"_id": "d\\ud800", "text": "x"}\n', "corpus.jsonl:2", "`_id` contains a lone surrogate '\\ud800'"),
    Case("corpus-surrogate-in-text", "corpus.jsonl", DOC + b'{"_id": "d2", "text": "x \\udfff"}\n', "corpus.jsonl:2", "`text` contains a lone surrogate"),
    Case("corpus-invalid-utf8-line-4000", "corpus.jsonl", numbered(b'{"_id": "d%d", "text": "w"}\n', 3999) + b'{"_id": "x", "text": "\xff"}\n',
         "corpus.jsonl:4000", "not valid UTF-8"),
    Case("corpus-empty", "corpus.jsonl", b"\n\n", "corpus.jsonl", "file is empty"),
    Case("queries-malformed-json", "queries.jsonl", b'{"_id": "q1", "text": "alpha"\n', "queries.jsonl:1", "malformed JSON"),
    Case("queries-no-text", "queries.jsonl", b'{"_id": "q1", "text": "alpha"}\n{"_id": "q2", "text": " "}\n', "queries.jsonl:2", "query 'q2' has no text"),
    Case("queries-surrogate", "queries.jsonl", b'{"_id": "q1", "text": "alpha \\ud83d"}\n', "queries.jsonl:1", "`text` contains a lone surrogate"),
    Case("qrels-relevance-not-a-number", "qrels/test.tsv", b"q1\td1\thigh\n", "qrels/test.tsv:1", "relevance 'high' is not a number"),
    Case("qrels-relevance-fraction", "qrels/test.tsv", b"q1\td1\t0.5\n", "qrels/test.tsv:1", "relevance '0.5' is not an integer"),
    Case("qrels-relevance-beyond-32-bits", "qrels/test.tsv", b"q1\td1\t1\nq2\td2\t10000000000000000000000\n", "qrels/test.tsv:2",
         "relevance 10000000000000000000000 for query 'q2', document 'd2' is outside -2147483647..2147483647"),
    Case("qrels-two-fields", "qrels/test.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\n", "qrels/test.tsv:2", "expected 3 tab-separated fields"),
    Case("qrels-empty-id", "qrels/test.tsv", b"q1\t\t1\n", "qrels/test.tsv:1", "empty query-id or corpus-id"),
    Case("qrels-conflict", "qrels/test.tsv", b"q1\td1\t1\nq2\td2\t1\nq1\td1\t0\n", "qrels/test.tsv:3",
         "conflicting judgements for query 'q1', document 'd1': 1 (line 1) and 0"),
    Case("qrels-only-header", "qrels/test.tsv", b"query-id\tcorpus-id\tscore\n", "qrels/test.tsv", "no judgements (only a header)"),
    Case("qrels-invalid-utf8-line-200", "qrels/test.tsv", b"query-id\tcorpus-id\tscore\n" + b"q1\td1\t1\n" * 198 + b"q1\td\xff\t1\n",
         "qrels/test.tsv:200", "not valid UTF-8"),
    Case("qrels-all-queries-unknown", "qrels/test.tsv", b"Q1\td1\t1\nQ2\td2\t1\n", "qrels/test.tsv",
         "none of the 2 queries of the qrels is in queries.jsonl (qrels: 'Q1', 'Q2'; queries.jsonl: 'q1', 'q2')"),
]

# Not faults: files a reader must accept (Windows tools write BOMs and CRLF).
BEIR_ACCEPTED = [
    Case("corpus-bom-crlf", "corpus.jsonl", BOM + GOOD_BEIR["corpus.jsonl"].replace(b"\n", b"\r\n"), "", ""),
    Case("queries-bom", "queries.jsonl", BOM + GOOD_BEIR["queries.jsonl"], "", ""),
    Case("qrels-bom-header", "qrels/test.tsv", BOM + GOOD_BEIR["qrels/test.tsv"], "", ""),
]

# -- TREC run and qrels files (irforge metrics QRELS RUN) ---------------------------------------

GOOD_TREC = {"run.txt": b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n", "qrels.txt": b"q1 0 d1 1\nq1 0 d2 0\n"}
RUN_LINE = b"q1 Q0 d1 1 2.0 t\n"

TREC_CASES = [
    Case("run-five-fields", "run.txt", RUN_LINE + b"q1 Q0 d2 2 1.0\n", "run.txt:2", "expected at least 6 fields (qid Q0 docno rank score tag), got 5"),
    Case("run-score-not-a-number", "run.txt", b"q1 Q0 d1 1 high t\n", "run.txt:1", "score 'high' is not a number"),
    Case("run-score-nan", "run.txt", RUN_LINE + b"q1 Q0 d2 2 nan t\n", "run.txt:2", "score nan for query 'q1', document 'd2' is not a finite number"),
    Case("run-score-inf", "run.txt", b"q1 Q0 d1 1 -Infinity t\n", "run.txt:1", "score -inf for query 'q1', document 'd1' is not a finite number"),
    Case("run-duplicate-entry", "run.txt", RUN_LINE + b"q1 Q0 d1 2 1.0 t\n", "run.txt:2", "document 'd1' appears twice for query 'q1'"),
    Case("run-empty", "run.txt", b"\n", "run.txt", "file is empty"),
    Case("run-invalid-utf8-line-4000", "run.txt", numbered(b"q1 Q0 d%d 1 1.0 t\n", 3999) + b"q1 Q0 \xe9 1 1.0 t\n", "run.txt:4000", "not valid UTF-8"),
    Case("run-truncated-gzip", "run.txt.gz", truncated_gzip(numbered(b"q1 Q0 d%d 1 1.0 t\n", 50)), "run.txt.gz", "cannot read"),
    Case("qrels-three-fields", "qrels.txt", b"q1 0 d1\n", "qrels.txt:1", "expected 4 fields (qid iter docno rel), got 3"),
    Case("qrels-relevance-not-a-number", "qrels.txt", b"q1 0 d1 yes\n", "qrels.txt:1", "relevance 'yes' is not a number"),
    Case("qrels-relevance-1e22", "qrels.txt", b"q1 0 d1 1e22\n", "qrels.txt:1",
         "relevance 10000000000000000000000 for query 'q1', document 'd1' is outside -2147483647..2147483647"),
    Case("qrels-relevance-2-to-the-63-minus-1", "qrels.txt", b"q1 0 d1 9223372036854775807\n", "qrels.txt:1",
         "relevance 9223372036854775807 for query 'q1', document 'd1' is outside"),
    Case("run-score-huge-overflows-to-inf", "run.txt", b"q1 Q0 d1 1 1e400 t\n", "run.txt:1",
         "score inf for query 'q1', document 'd1' is not a finite number"),
    Case("qrels-conflict", "qrels.txt", b"q1 0 d1 1\nq1 0 d1 0\n", "qrels.txt:2", "conflicting judgements for query 'q1', document 'd1'"),
    Case("qrels-invalid-utf8-line-200", "qrels.txt", b"q1 0 d1 1\n" * 199 + b"q1 0 d\xff 1\n", "qrels.txt:200", "not valid UTF-8"),
    Case("qrels-bom-inside", "qrels.txt", b"q1 0 d1 1\n" + BOM + b"q1 0 d2 x\n", "qrels.txt:2", "relevance 'x' is not a number"),
    Case("run-and-qrels-disjoint", "run.txt", b"Q1 Q0 d1 1 2.0 t\n", "",
         "no query of the run has judgements in the qrels (run: 1 query, e.g. 'Q1'; qrels: 1 query, e.g. 'q1')"),
]

TREC_ACCEPTED = [
    Case("run-bom", "run.txt", BOM + GOOD_TREC["run.txt"], "", ""),
    Case("qrels-bom-crlf", "qrels.txt", BOM + GOOD_TREC["qrels.txt"].replace(b"\n", b"\r\n"), "", ""),
]

# -- instruction-following collections (InfoSearch layout: og / changed / reversed modes) ---------
# Run by test_bad_inputs.py through `irforge eval-instructions`, over the gRPC services and as an
# orchestrator job, like BEIR_CASES. A row may add a file (`qrels/test.tsv` beside the mode
# folders) rather than replace one.

IQ = b'{"_id": "q1", "text": "alpha", "instruction_og": "", "instruction_changed": "only t", "instruction_reversed": "not t"}\n'
GOOD_INSTRUCTIONS = {
    "corpus.jsonl": GOOD_BEIR["corpus.jsonl"],
    "queries.jsonl": IQ + b'{"_id": "q2", "text": "gamma", "instruction_og": "", "instruction_changed": "only g", '
                          b'"instruction_reversed": "not g"}\n',
    "qrels_og/test.tsv": b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n",
    "qrels_changed/test.tsv": b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t0\n",
    "qrels_reversed/test.tsv": b"query-id\tcorpus-id\tscore\nq1\td1\t0\nq2\td2\t1\n",
}

INSTRUCTION_CASES = [
    Case("if-queries-missing-reversed-instruction", "queries.jsonl", IQ + b'{"_id": "q2", "text": "gamma", "instruction_og": "", '
         b'"instruction_changed": "only g"}\n', "queries.jsonl:2", "query 'q2' has no `instruction_reversed`"),
    Case("if-queries-instruction-not-text", "queries.jsonl", b'{"_id": "q1", "text": "alpha", "instruction_og": 5, '
         b'"instruction_changed": "x", "instruction_reversed": "y"}\n', "queries.jsonl:1",
         "`instruction_og` of query 'q1' must be a string"),
    Case("if-queries-malformed-json", "queries.jsonl", IQ + b'{"_id": "q2", "text": \n', "queries.jsonl:2", "malformed JSON"),
    Case("if-queries-instruction-null", "queries.jsonl", b'{"_id": "q1", "text": "alpha", "instruction_og": null, '
         b'"instruction_changed": "x", "instruction_reversed": "y"}\n', "queries.jsonl:1",
         '`instruction_og` of query \'q1\' must be a string ("" for none), got null'),
    Case("if-corpus-duplicate-id", "corpus.jsonl", DOC + DOC, "corpus.jsonl:2", "duplicate document id 'd1' (first seen on line 1)"),
    Case("if-qrels-changed-two-fields", "qrels_changed/test.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\n",
         "qrels_changed/test.tsv:2", "expected 3 tab-separated fields"),
    Case("if-qrels-reversed-relevance-not-a-number", "qrels_reversed/test.tsv", b"q1\td1\t0\nq2\td2\thigh\n",
         "qrels_reversed/test.tsv:2", "relevance 'high' is not a number"),
    Case("if-qrels-og-invalid-utf8", "qrels_og/test.tsv", b"q1\td1\t1\nq2\td\xff\t1\n", "qrels_og/test.tsv:2", "not valid UTF-8"),
    Case("if-ambiguous-qrels-beside-modes", "qrels/test.tsv", GOOD_BEIR["qrels/test.tsv"], ".",  # the folder
         "ambiguous folder: both qrels/ (InstructIR layout) and qrels_og/"),
]
