"""Strict label parsing: exactly one label 0-3 is a label; everything else is unparsed, never 0."""

from __future__ import annotations

import pytest

from irforge.judge.parsing import parse_label

ACCEPTED = [
    ("0", 0), ("1", 1), ("2", 2), ("3", 3),
    ("2.", 2), (" 3\n", 3), ("\t1 ", 1), ("0.", 0),
    ("Label: 2", 2), ("label 1.", 1), ("LABEL=0", 0), ("label:3", 3), ("Label - 2", 2),
    ("**2**", 2), ("`3`", 3), ("'1'", 1), ('"0"', 0), ("**2**.", 2),
]

REJECTED = [
    ("", "empty"), ("   \n", "empty"),
    ("2 or 3", "2 numbers"), ("2-3", "2 numbers"), ("2\n3", "2 numbers"), ("Label: 2, maybe 3", "2 numbers"),
    ("1 2 3", "3 numbers"),
    ("23", "23 is not a label"), ("10", "10 is not a label"), ("02", "02 is not a label"),
    ("4", "4 is not a label"), ("-1", "-1 is not a label"), ("2.5", "2.5 is not a label"), ("3,0", "is not a label"),
    ("relevant", "no label"), ("not relevant", "no label"), ("label:", "no label"),
    ("2 - somewhat relevant", "words around"), ("I would say 2", "words around"), ("The answer is 3.", "words around"),
    ("labels: 2", "words around"), ("2..", "words around"), ("2!", "words around"),
    ("**2", "words around"), ("2**", "words around"), ("'2", "words around"), ("`2'", "words around"),
    ("２", "no label"),     # a full-width digit is not an ASCII label
    ("٢", "no label"),      # nor an Arabic-Indic two
    ("three", "no label"),
]


@pytest.mark.parametrize(("answer", "label"), ACCEPTED)
def test_a_single_label_is_read(answer, label):
    parsed = parse_label(answer)
    assert parsed.ok and parsed.label == label and parsed.problem == ""


@pytest.mark.parametrize(("answer", "why"), REJECTED)
def test_anything_else_is_unparsed_with_a_reason(answer, why):
    parsed = parse_label(answer)
    assert not parsed.ok
    assert parsed.label is None          # never 0 by default
    assert why in parsed.problem


def test_no_text_at_all_is_unparsed():
    assert parse_label(None).label is None
    assert "no text" in parse_label(None).problem


def test_a_long_answer_is_shortened_in_the_reason():
    parsed = parse_label("It depends. " * 50 + "2")
    assert not parsed.ok and len(parsed.problem) < 200 and parsed.problem.endswith("...'")
