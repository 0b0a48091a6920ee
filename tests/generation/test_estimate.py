"""The cost table the docs print is what `irforge generate --estimate` computes from the recipes'
stages and templates, and the estimate follows the options that change the work."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from irforge.generation.estimate import estimate

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| `(airbench-qa|airbench-longdoc|infosearch)`[^|]*\|(?: [^|]* \|)?? ([\d,]+) \| ([\d,]+) \| ([\d,]+) \| \$([\d.]+) \|$")


@pytest.mark.parametrize("page", ["docs/quickstart.md", "docs/generation.md"])
def test_the_documented_table_is_the_estimate(page):
    rows = {}
    for line in (ROOT / page).read_text().splitlines():
        if (match := ROW.match(line)):
            rows[match.group(1)] = [int(match.group(n).replace(",", "")) for n in (2, 3, 4)] + [float(match.group(5))]
    assert set(rows) == {"airbench-qa", "airbench-longdoc", "infosearch"}, f"{page}: the cost table's rows went missing"
    for recipe, (calls, prompt, answer, cost) in rows.items():
        found = estimate(recipe, 100)
        assert [found["calls"], found["prompt_tokens"], found["answer_tokens_at_most"]] == [calls, prompt, answer], recipe
        assert round(found["cost_usd_at_most"], 2) == cost


def test_the_estimate_follows_the_options():
    assert estimate("airbench-qa", 10, rewrites=5)["calls"] == 10 * (4 + 5)
    assert estimate("infosearch", 10, dimensions=["length", "keyword"])["calls"] == 10 * (3 * 2 + 1)   # keyword rewrites nothing
    free = estimate("airbench-longdoc", 100, prompt_price=0, completion_price=0)
    assert free["cost_usd_at_most"] == 0 and free["calls"] == 600
