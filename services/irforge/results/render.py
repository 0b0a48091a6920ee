"""Results render themselves (as ranx's Report): the text table `irforge eval` and `irforge
eval-instructions` print, and the same content as Markdown, from results.json's record alone,
so the command line, bench and a notebook show the same thing."""

from __future__ import annotations

# Light on purpose (`import irforge` stays stdlib-only until called): latency_lines, which needs
# numpy, is imported where a table is drawn.

from pathlib import PurePath

from irforge.results.cells import markdown_cell as _md, text_cell as _one


def describe_retriever(retriever: dict) -> str:
    """One line for results.json's `retriever` (eval's table, bench's suite.md, reports): what ran,
    with the settings that tell runs apart; a description it does not know falls back to its name."""
    if not retriever:
        return "(not recorded)"
    try:
        return _describe(retriever)
    except (KeyError, TypeError, AttributeError):
        return str(retriever.get("name") or retriever.get("kind") or "(unnamed)")


def _describe(retriever: dict) -> str:
    if "first_stage" in retriever:
        return f"{_describe(retriever['first_stage'])} reranked (depth {retriever['rerank_depth']})"
    if retriever["name"] == "given":
        producer = f", {retriever['producer']}" if retriever.get("producer") else ""
        return f"run file {PurePath(retriever['run_file']).name} ({retriever['format']}{producer})"
    if retriever["name"] == "bm25":
        language = retriever.get("language", "en")   # English, as every run before languages was
        shown = "" if language == "en" else f", language {language}"
        return f"bm25 ({retriever['backend']}, k1={retriever.get('k1')}, b={retriever.get('b')}{shown})"
    if retriever["name"] == "dense":
        search = retriever["search"] if isinstance(retriever["search"], str) else "hnsw"
        return f"dense ({retriever['encoder']['model']}, {search}, {retriever['vector_backend']})"
    if retriever["name"] == "sparse":
        return f"sparse ({retriever['encoder']['model']}, exact dot, {retriever['vector_backend']})"
    if retriever["name"] == "hybrid":
        second = "dense" if "dense" in retriever else "sparse"
        model = retriever[second]["encoder"]["model"]
        return f"hybrid ({_fusion_method(retriever['fusion'])} of bm25 + {model if second == 'dense' else 'sparse ' + model})"
    if retriever["name"] == "fusion":
        return f"fusion ({_fusion_method(retriever['fusion'])} of {' + '.join(_describe(run) for run in retriever['runs'])})"
    return retriever["name"]


def _fusion_method(fusion: dict) -> str:
    """rrf, linear, or a normalising method with its normalisation (wsum min-max); weights when they were chosen."""
    shown = f"{fusion['method']} {fusion['norm']}" if "norm" in fusion else fusion["method"]
    if "optimisation" in fusion:
        chosen = fusion["optimisation"]
        shown += f", weights {','.join(f'{w:g}' for w in chosen['weights'].values())} chosen on {chosen['split']}"
    return shown


def fusion_lines(retriever: dict) -> list[str]:
    """The weight search's outcome, printed under the table: the weights chosen, their score on the
    development split, and the space searched (results.json has every point)."""
    fusion = (retriever.get("first_stage") or retriever).get("fusion") or {}
    chosen = fusion.get("optimisation")
    if not chosen:
        return []
    weights = ", ".join(f"{label} {weight:g}" for label, weight in chosen["weights"].items())
    space = chosen["search_space"]
    return [f"fusion weights chosen on {chosen['split']} ({chosen['queries']} queries; {space['points']} grid points, step "
            f"{space['step']:g}, summing to 1): {weights} · {chosen['measure']} {chosen['score']:.4f} on {chosen['split']}"]


def text(results: dict) -> str:
    """The table of `irforge eval` or of `irforge eval-instructions`, whichever made `results`."""
    lines = _instruction_lines(results) if results.get("kind") == "instructions" else _eval_lines(results)
    if "holes" in results:
        lines += holes_lines(results["holes"])
    return "\n".join(lines) + "\n"


def markdown(results: dict) -> str:
    """The metric table as Markdown: a heading line, then | measure | value | (per dimension for
    instruction-following results)."""
    if results.get("kind") == "instructions":
        dimensions = results["dimensions"]
        columns = [*dimensions, "mean"] if len(dimensions) > 1 else ["value"]
        head = _md(f"**{results['dataset']}** · {results['split']} · {results['layout']} layout · {results['retriever'].get('name')}")
        rows = [f"| measure | {' | '.join(map(_md, columns))} |", "|---|" + "---:|" * len(columns)]
        for name in results["metrics"]:
            cells = [dimensions[d]["metrics"].get(name) for d in dimensions] if len(dimensions) > 1 else []
            cells.append(results["metrics"][name])
            rows.append(f"| {_md(name)} | " + " | ".join("—" if v is None else f"{v:.4f}" for v in cells) + " |")
        return "\n".join([head, "", *rows]) + "\n"
    head = _md(f"**{results['dataset']}** · {results['split']} · {describe_retriever(results['retriever'])} · "
               f"{results['evaluation']['queries_evaluated']} queries")
    rows = ["| measure | value |", "|---|---:|", *(f"| {_md(name)} | {value:.4f} |" for name, value in results["metrics"].items())]
    warning = [f"**{_md(line)}**" for line in sample_lines(results)]
    return "\n".join([*warning, head, "", *rows]) + "\n"


def sample_lines(results: dict) -> list[str]:
    """The banner above the figures of `irforge eval --sample N` (irforge.data.sample): not the dataset's."""
    sample = results.get("sample")
    return [_one(sample["note"])] if sample else []


def _eval_lines(results: dict) -> list[str]:
    from irforge.pipeline.latency import latency_lines

    evaluation = results["evaluation"]
    lines = ["", *sample_lines(results), _one(f"{results['dataset']} · {results['split']} · "
                                              f"{describe_retriever(results['retriever'])} · {evaluation['queries_evaluated']} queries")]
    metrics = {_one(name): value for name, value in results["metrics"].items()}
    width = max(len(name) for name in metrics)
    lines.append(f"{'measure':<{width}}  value")
    lines += [f"{name:<{width}}  {value:.4f}" for name, value in metrics.items()]
    lines += fusion_lines(results["retriever"])
    from irforge.pipeline.retrievers.search_recall import recall_lines

    lines += recall_lines(results["retriever"])
    problems = results["data"]["qrels_problems"]
    if problems["unknown_queries"] or problems["unknown_documents"]:
        lines.append(f"qrels problems: {problems['unknown_queries']} unknown queries, "
                     f"{problems['unknown_documents']} unknown documents")
    counts = results["counts"]
    if counts.get("run_queries_not_in_split"):
        lines.append(f"run file: {counts['run_queries_not_in_split']} of its {counts['run_queries']} queries are not "
                     f"queries of the split, not scored (e.g. {', '.join(counts['run_queries_not_in_split_examples'][:3])})")
    if counts.get("split_queries_not_in_run"):
        lines.append(f"run file: {counts['split_queries_not_in_run']} queries of the split have no ranking in it, each "
                     f"scores 0 (e.g. {', '.join(counts['split_queries_not_in_run_examples'][:3])})")
    if counts["documents_failed"]:
        lines.append(f"documents not indexed: {counts['documents_failed']} (see results.json counts.document_errors)")
    work = []
    if counts.get("reindexed_because"):
        lines.append(f"bm25 index not reused: {counts['reindexed_because']}")
    if "documents_ingested" in counts:
        work.append("bm25 index reused (complete: fingerprint and document count match)" if counts["ingest_skipped"]
                    else f"{counts['documents_ingested']} documents indexed")
    if "documents_encoded" in counts:
        work.append("vectors reused" if counts["vectors_skipped"] else
                    f"{counts['documents_encoded']} documents encoded ({counts['documents_reused_from_cache']} from cache)")
    timings = results["timings"]
    done = f"{', '.join(work)} · " if work else ""   # a run file as the system indexed nothing
    lines.append(f"{done}index {timings['index_s']:.1f}s · retrieve {timings['retrieve_s']:.1f}s · "
                 f"evaluate {timings['evaluate_s']:.1f}s")
    lines += latency_lines(results.get("latency"))  # results written before latency was recorded have none
    lines.append(f"wrote {_one(results['files']['run'])} and results.json")
    return lines


# Printed as the paper tables do: modes' nDCG first, then the instruction-following metrics.
def _instruction_lines(results: dict) -> list[str]:
    from irforge.pipeline.latency import latency_lines

    dimensions = results["dimensions"]
    names = list(results["metrics"])
    queries = sum(d["queries"] for d in dimensions.values())
    lines = ["", _one(f"{results['dataset']} · {results['split']} · {results['layout']} layout · "
                      f"{results['retriever'].get('name')} · {len(dimensions)} dimension(s), {queries} queries")]
    columns = [*map(_one, dimensions), "mean"] if len(dimensions) > 1 else ["value"]
    width = max(len(_one(name)) for name in [*names, "measure"])
    widths = [max(len(column), 7) for column in columns]
    lines.append(f"{'measure':<{width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(columns, widths)))
    for name in names:
        cells = [dimensions[d]["metrics"].get(name) for d in dimensions] if len(dimensions) > 1 else []
        cells.append(results["metrics"][name])
        lines.append(f"{_one(name):<{width}}  " + "  ".join("—".rjust(w) if v is None else f"{v:>{w}.4f}"
                                                      for v, w in zip(cells, widths)))
    if any(name.startswith(("p-MRR", "WISE", "SICR")) for name in names):
        lines.append("p-MRR, WISE and SICR are fractions here; papers print them x 100")
    timings = results["timings"]
    lines.append(f"index {timings['index_s']:.1f}s · retrieve {timings['retrieve_s']:.1f}s · "
                 f"evaluate {timings['evaluate_s']:.1f}s")
    lines += latency_lines(results.get("latency"))
    runs = [_one(name) for files in results["files"]["runs"].values() for name in files.values()]
    lines.append(f"wrote {len(runs)} run files ({runs[0]}, ...) and results.json" if len(runs) > 1
                 else f"wrote {runs[0]} and results.json")
    return lines


def no_paid_call_note(backend: str, calls: int) -> str:
    """Said after a count of 0 judge calls made by the embedded judge, which never sends a request:
    a bare 0 reads as if the labels came from nowhere, or as if a paid judge had been skipped."""
    return " (embedded judge, on this machine: no paid call needed)" if backend == "embedded" and calls == 0 else ""


def holes_lines(report: dict) -> list[str]:
    """The summary of a holes report (judge-holes, eval --fill-holes): counts, then metrics before and after."""
    depth = report["depth"]
    note = no_paid_call_note(report["judge"].get("backend", ""), report["judge_calls"])
    lines = ["", f"{_one(report['dataset'])} · {_one(report['split'])} · holes in the top {depth}: {report['holes']} · judged "
                 f"{report['judged']} ({report['from_store']} from the store) · judge calls {report['judge_calls']}{note} · "
                 f"unparsed {report['unparsed']} · failed {report['failed']}"]
    lines += screening_lines(report.get("screening"))
    before, after = report["metrics_before"], report["metrics_after"]
    width = max(len(_one(name)) for name in before)
    lines.append(f"{'measure':<{width}}  before   after")
    lines += [f"{_one(name):<{width}}  {before[name]:.4f}  {after[name]:.4f}" for name in before]
    return lines


def screening_lines(screening: dict | None) -> list[str]:
    """How many holes addressed the judge and what became of them (judge/flagged.py)."""
    if not screening or not screening["flagged"]:
        return []
    fate = {"leave": "not labelled: review flagged.tsv", "label": "labelled by the judge as any hole",
            "second-judge": "sent to the second judge"}[screening["policy"]]
    first = screening["examples"][0]
    return [f"flagged {screening['flagged']} of {screening['screened']} holes whose text addresses the judge ({fate}; {screening['flagged_labelled']} labelled, {screening['flagged_relevant']} relevant) · "
            f"e.g. {first['query_id']}/{first['doc_id']} {first['rule']}: {first['phrase'][:60]!r}"]


def qc_lines(summary: dict) -> list[str]:
    """`irforge qc`'s summary (qc_summary.json's content) as the lines it prints."""
    lines = [f"{summary['dataset']} · {summary['split']} · quality control of {summary['queries']} queries "
             f"({len(summary['rerankers'])} rerankers, recall depth {summary['recall']['depth']})",
             f"{'case':<18} {'asked':>6} {'undecided':>9}  actions"]
    for case, counts in summary["cases"].items():
        actions = ", ".join(f"{name} {n}" for name, n in counts.items()
                            if name not in ("asked", "labelled", "undecided") and n)
        lines.append(f"{case:<18} {counts['asked']:>6} {counts['undecided']:>9}  {actions or '-'}")
    stats = summary["judge"]["stats"]
    lines.append(f"queries dropped {len(summary['queries_dropped'])} · documents removed "
                 f"{len(summary['documents_removed'])} · positives added {len(summary['positives_added'])}")
    backend = summary["judge"]["identity"].get("backend", "?")
    lines.append(f"judge {backend}: {stats['calls']} calls{no_paid_call_note(backend, stats['calls'])}, "
                 f"{stats['from_store']} from the store, {stats['unparsed']} unparsed, {stats['failed']} failed, "
                 f"${stats['cost_usd']:.4f}")
    lines.append(f"wrote {summary['output']} (qc_audit.jsonl: {summary['files']['audit_records']} records)")
    return lines
