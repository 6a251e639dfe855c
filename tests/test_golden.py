"""The Core v2 kernel reproduces suse 0.1.0's summaries bit for bit (tests/golden.py)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from golden import configs, run_case

RECORDED = json.loads(gzip.decompress((Path(__file__).parent / "data" / "summary_golden.json.gz").read_bytes()))


def test_recorded_cases_are_the_generated_ones():
    assert [c["config"] for c in RECORDED] == configs()


@pytest.mark.parametrize("case", RECORDED, ids=lambda c: "{size}-{window}-{strategy}-{policy}-{aggregate}-{seed}".format(**c["config"]))
def test_summary_evaluations_equal_the_previous_release(case):
    assert run_case(case["config"]) == case
