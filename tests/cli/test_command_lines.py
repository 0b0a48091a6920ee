"""Mistyped command lines fail early and say what to type instead: a single-value option given
twice is refused (argparse would keep the last one silently), invalid choices, sub-commands and
options get the nearest valid one, and every option of every command explains itself in --help."""

from __future__ import annotations

import argparse

import pytest

from irforge.cli.main import build_parser, main


def every_parser(parser: argparse.ArgumentParser, path: str = "irforge"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from every_parser(sub, f"{path} {name}")


def test_every_option_and_argument_of_every_command_has_help_text():
    silent = [(path, action.option_strings or action.dest) for path, parser in every_parser(build_parser())
              for action in parser._actions
              if not action.help and not isinstance(action, (argparse._HelpAction, argparse._VersionAction,
                                                             argparse._SubParsersAction))]
    assert not silent, silent


@pytest.mark.parametrize("argv, said", [
    (["eval", "--dataset", "a", "--dataset", "b", "--out", "x"], "--dataset given twice (a and b); give it once"),
    (["eval", "--dataset", "a", "--out", "x", "--model", "m1", "--model=m2"], "--model given twice (m1 and m2)"),
    (["submit", "--dataset", "a", "--retriever", "bm25", "--retriever", "dense"], "--retriever given twice (bm25 and dense)"),
    (["metrics", "q", "r", "-M", "10", "-M", "20"], "-M given twice (10 and 20)"),
])
def test_a_single_value_option_given_twice_is_refused(argv, said, capsys):
    assert main(argv) == 2
    assert said in capsys.readouterr().err


def test_options_meant_to_repeat_still_do(tmp_path, conformance_dir, capsys):
    assert main(["metrics", str(conformance_dir / "qrels.test"), str(conformance_dir / "results.test"),
                 "-m", "P.5", "-m", "map"]) == 0
    out = capsys.readouterr().out
    assert "P_5" in out and "map" in out


@pytest.mark.parametrize("argv, suggestion", [
    (["evl", "--dataset", "a"], "did you mean 'eval'?"),
    (["judge-hole"], "did you mean 'judge-holes'?"),
    (["eval", "--dataset", "a", "--out", "x", "--retriever", "dens"], "did you mean 'dense'?"),
    (["service", "evaluatr"], "did you mean 'evaluator'?"),
    (["eval", "--dataset", "a", "--out", "x", "--datset", "b"], "did you mean '--dataset'?"),
    (["eval", "--dataset", "a", "--out", "x", "--top-kk=5"], "did you mean '--top-k'?"),
])
def test_a_mistyped_word_gets_the_nearest_valid_one(argv, suggestion, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert suggestion in err, err


def test_nothing_close_suggests_nothing(capsys):
    assert main(["zzzzzz"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'zzzzzz'" in err and "did you mean" not in err
