"""The argument parser every irforge command uses: argparse, stricter where a typo would otherwise
pass silently, and helpful where argparse only says no.

- An option that takes one value, given twice (`--dataset a ... --dataset b`), is refused:
  argparse keeps the last one, so the run would quietly use a dataset the user may not have meant.
  Options meant to repeat (`-m` measures) use `append` and are unaffected.
- An invalid choice or an unknown option gets the nearest valid one ("did you mean ...?").
"""

from __future__ import annotations

import argparse
import difflib


class StoreOnce(argparse._StoreAction):
    """`store`, refusing a second value for the same option within one command line."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = parser.__dict__.setdefault("_values_given", {})
        if self.dest in given:
            parser.error(f"{option_string} given twice ({given[self.dest]} and {values}); give it once")
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


def nearest(word: str, candidates) -> str:
    """'; did you mean X?' for the closest candidate, or ''."""
    close = difflib.get_close_matches(word, [str(c) for c in candidates], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class IrforgeParser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        # Abbreviated options (`--data` for `--dataset`) stay allowed; only exact repeats are refused.
        super().__init__(*args, **kwargs)
        self.register("action", None, StoreOnce)
        self.register("action", "store", StoreOnce)

    def parse_known_args(self, args=None, namespace=None):
        self._values_given = {}   # per parse: the same parser object may parse several command lines
        return super().parse_known_args(args, namespace)

    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            hint = ""
            unknown = next((extra for extra in extras if extra.startswith("-")), None)
            if unknown is not None:
                hint = nearest(unknown.split("=", 1)[0], self._options_of(parsed))
            self.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return parsed

    def _options_of(self, parsed) -> list[str]:
        """The option strings of the sub-command that was parsed (or of this parser)."""
        parser = self
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                parser = action.choices.get(getattr(parsed, action.dest, None), self)
        return [option for action in parser._actions for option in action.option_strings]

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            choices = ", ".join(map(repr, action.choices))
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {choices}){nearest(str(value), action.choices)}")
