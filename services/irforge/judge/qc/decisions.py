"""Which pairs quality control asks the judge about, and what each answer does to the dataset
(AIR-Bench quality control, ../shared/PRODUCT.md section 5 steps 1 and 3).

Three kinds of cases:
- labelled positive (qrels label > 0), every one of them: judged not relevant -> drop the query
  and its labels;
- generated hard negative (listed in --hard-negatives) pre-labelled positive: judged relevant ->
  remove the document from the corpus and its 0 label;
- unlabelled document (no qrels line for the query) pre-labelled positive: judged relevant ->
  add it as a positive (label 1).
"Relevant" means label >= relevant_from (default 2, the judge's DEFAULT_RELEVANT_FROM). A pair the
judge did not label (UNPARSED, FAILED) changes nothing: it is recorded as undecided.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from irforge.judge.base import Judgement
from irforge.judge.qc.prelabel import PreLabel, Thresholds, prelabel

ADDED_POSITIVE_LABEL = 1  # AIR-Bench adds a judged-relevant unlabelled document as label 1


class Case(str, enum.Enum):
    LABELLED_POSITIVE = "labelled_positive"
    HARD_NEGATIVE = "hard_negative"
    UNLABELLED = "unlabelled"


class Action(str, enum.Enum):
    DROP_QUERY = "drop_query"
    REMOVE_DOCUMENT = "remove_document"
    ADD_POSITIVE = "add_positive"
    NO_CHANGE = "no change"


@dataclass(frozen=True)
class Question:
    case: Case
    query_id: str
    doc_id: str
    qrels_label: int | None     # the input's label for (query, doc), None when unlabelled
    prelabel: PreLabel


def labelled_positive_questions(query_id: str, judged: Mapping[str, int], ranks_by_reranker,
                                thresholds: Thresholds) -> list[Question]:
    """Step 1: every labelled positive of the query, whatever the rerankers think of it (their
    ranks are recorded for the audit; None where the document was not recalled)."""
    return [Question(Case.LABELLED_POSITIVE, query_id, doc_id, label,
                     prelabel(ranks_by_reranker, doc_id, thresholds.default))
            for doc_id, label in sorted(judged.items()) if label > 0]


def prelabelled_questions(query_id: str, candidates: list[str], judged: Mapping[str, int],
                          hard_negatives: set[str], ranks_by_reranker, thresholds: Thresholds) -> Iterator[Question]:
    """Step 3: the recalled candidates pre-labelled positive that are a generated hard negative or
    unlabelled. A document with a label that is not a listed hard negative is no case: a human
    already judged it."""
    for doc_id in candidates:
        label = judged.get(doc_id)
        if label is not None and label > 0:
            continue  # a labelled positive: step 1 asks about it
        is_hard_negative = doc_id in hard_negatives
        if label is not None and not is_hard_negative:
            continue
        votes = prelabel(ranks_by_reranker, doc_id, thresholds.for_document(is_hard_negative))
        if votes.positive:
            case = Case.HARD_NEGATIVE if is_hard_negative else Case.UNLABELLED
            yield Question(case, query_id, doc_id, label, votes)


@dataclass(frozen=True)
class Decision:
    question: Question
    judgement: Judgement
    action: Action
    decided: bool     # False when the judge gave no label: nothing changes
    reason: str


def decide(question: Question, judgement: Judgement, relevant_from: int) -> Decision:
    if not judgement.is_label:
        detail = f": {judgement.error}" if judgement.error else ""
        return Decision(question, judgement, Action.NO_CHANGE, False, f"undecided: judge verdict {judgement.verdict.value}{detail}")
    relevant = judgement.label >= relevant_from
    verdict = f"judged {judgement.label} ({'relevant' if relevant else 'not relevant'}; relevant from {relevant_from})"
    if question.case is Case.LABELLED_POSITIVE:
        if relevant:
            return Decision(question, judgement, Action.NO_CHANGE, True, f"positive confirmed: {verdict}")
        return Decision(question, judgement, Action.DROP_QUERY, True, f"labelled positive {verdict}")
    if not relevant:
        return Decision(question, judgement, Action.NO_CHANGE, True, verdict)
    if question.case is Case.HARD_NEGATIVE:
        return Decision(question, judgement, Action.REMOVE_DOCUMENT, True, f"generated hard negative {verdict}")
    return Decision(question, judgement, Action.ADD_POSITIVE, True, f"unlabelled pre-labelled positive {verdict}")


@dataclass
class Corrections:
    """What the output dataset differs by."""

    dropped_queries: set[str] = field(default_factory=set)
    removed_documents: set[str] = field(default_factory=set)
    added_positives: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.dropped_queries or self.removed_documents or self.added_positives)


def resolve(decisions: list[Decision], positive_of: Mapping[str, set[str]]) -> tuple[list[Decision], Corrections]:
    """Final actions once every answer is in, and the corrections they make.

    Conflicts are settled so that the output never holds a label without its query or document:
    - a hard negative judged relevant that is a labelled positive of ANOTHER query (`positive_of`:
      doc id -> queries labelling it > 0, over every split) stays in the corpus (no change):
      removing it would break those labels;
    - a positive to add whose document is removed, or whose query is dropped, is not added.
    """
    corrections = Corrections()
    for decision in decisions:
        if decision.action is Action.DROP_QUERY:
            corrections.dropped_queries.add(decision.question.query_id)
    final: list[Decision] = []
    for decision in decisions:
        question = decision.question
        if decision.action is Action.REMOVE_DOCUMENT:
            if question.query_id in corrections.dropped_queries:
                decision = replace(decision, action=Action.NO_CHANGE, reason=f"{decision.reason}; query dropped, document kept")
            elif others := sorted(positive_of.get(question.doc_id, set()) - {question.query_id}):
                decision = replace(decision, action=Action.NO_CHANGE,
                                   reason=f"{decision.reason}; kept: it is a labelled positive of query {others[0]}")
            else:
                corrections.removed_documents.add(question.doc_id)
        final.append(decision)
    for position, decision in enumerate(final):
        question = decision.question
        if decision.action is not Action.ADD_POSITIVE:
            continue
        if question.query_id in corrections.dropped_queries:
            final[position] = replace(decision, action=Action.NO_CHANGE, reason=f"{decision.reason}; query dropped")
        elif question.doc_id in corrections.removed_documents:
            final[position] = replace(decision, action=Action.NO_CHANGE,
                                      reason=f"{decision.reason}; document removed from the corpus as a hard negative")
        else:
            corrections.added_positives[question.query_id, question.doc_id] = ADDED_POSITIVE_LABEL
    return final, corrections
