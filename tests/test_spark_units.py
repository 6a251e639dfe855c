"""Pieces of the Spark pipeline that need no SparkSession: durations, triggers, job files."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyspark")

import suse  # noqa: E402
from suse.errors import InputError  # noqa: E402
from suse.spark.events.timing import TimeAxis, parse_duration  # noqa: E402
from suse.spark.events.triggers import Trigger, key_hash, parse_trigger  # noqa: E402
from suse.spark.jobs.config import ConfigError  # noqa: E402
from suse.spark.jobs.load import load_config, parse_config  # noqa: E402
from suse.spark.runners.plan import plan_of  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DATES = TimeAxis("t", "timestamp")
INTS = TimeAxis("t", "integer")


@pytest.mark.parametrize(
    "text, seconds",
    [("3 days", 259200), ("90 minutes", 5400), ("2 hours", 7200), ("1 day 12 hours", 129600),
     ("2h30m", 9000), ("1 week", 604800), ("45s", 45), ("1.5 hours", 5400)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "3", "three days", "3 fortnights", "0.5 s"])
def test_bad_durations(text):
    with pytest.raises(InputError):
        parse_duration(text)


def test_durations_are_summed_exactly():
    # Summed as floats, 1.1 * 3600 = 3960.0000000000005 would be "not whole".
    assert parse_duration("1.1 hours") == 3960
    assert parse_duration("0.1 minutes 0.2 minutes") == 18
    assert DATES.span(dt.timedelta(hours=1.1), "window") == 3960


def test_zero_and_negative_durations():
    # "0 days" is allowed as 0 is; "-3 days" is read and refused as not positive.
    assert parse_duration("0 days") == 0
    assert DATES.span("0 days", "window") == DATES.span(0, "window") == 0
    for bad in ("-3 days", "1 day -2 hours", dt.timedelta(days=-3)):
        with pytest.raises(InputError, match="must be positive"):
            DATES.span(bad, "window")
    with pytest.raises(InputError, match="positive 'per'"):
        parse_trigger({"poisson": 2, "per": "0 days"}, DATES, 10)


def test_window_must_match_the_time_column():
    assert DATES.span("2 days", "window") == 172800
    assert DATES.span(dt.timedelta(hours=1), "window") == 3600
    assert INTS.span(100, "window") == 100
    assert INTS.span("100", "window") == 100
    with pytest.raises(InputError, match="holds date-times"):
        DATES.span(100, "window")
    with pytest.raises(InputError, match="holds integers"):
        INTS.span("3 days", "window")
    with pytest.raises(InputError, match="non-negative integer"):
        INTS.span(-1, "window")


def test_end_and_every_n_events():
    ts = np.array([1, 2, 2, 5, 7, 9, 9], dtype=np.int64)
    assert parse_trigger("end", INTS, 10).times(ts).tolist() == [9]
    # every 3rd event (timestamps 2 and 9) and the last event
    assert parse_trigger("every 3 events", INTS, 10).times(ts).tolist() == [2, 9]
    assert parse_trigger("every 2 events", INTS, 10).times(ts).tolist() == [2, 5, 9]
    assert parse_trigger("end", INTS, 10).times(ts[:0]).tolist() == []


def test_timestamp_lists():
    assert parse_trigger([30, 10, 10], INTS, 5).times(np.array([1])).tolist() == [10, 30]
    trig = parse_trigger(["2013-01-02", dt.datetime(2013, 1, 1, 6)], DATES, 5)
    assert trig.at == (1357020000, 1357084800)
    with pytest.raises(InputError, match="must be an integer"):
        parse_trigger(["2013-01-02"], INTS, 5)
    with pytest.raises(InputError, match="must be a date-time"):
        parse_trigger([5], DATES, 5)


def test_poisson_is_reproducible_per_partition():
    trig = parse_trigger({"poisson": 2, "per": 100, "seed": 3}, INTS, 10)
    ts = np.arange(0, 100_000, dtype=np.int64)
    a, b, c = trig.times(ts, ("x",)), trig.times(ts, ("x",)), trig.times(ts, ("y",))
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()
    assert 1800 < len(a) < 2200  # 2 per 100 time units over 100,000
    assert a.min() >= 0 and a.max() <= ts[-1] and (np.diff(a) > 0).all()
    # `per` defaults to the window; durations on date-time axes
    assert parse_trigger({"poisson": 1}, INTS, 50).period == 50
    assert parse_trigger({"poisson": 1, "per": "1 day"}, DATES, 50).period == 86400


def test_key_hash_is_stable():
    assert key_hash(("N725MQ",)) == key_hash(("N725MQ",)) != key_hash(("N725MQ ",))
    assert key_hash((None,)) != key_hash(("None",))
    assert key_hash((1,)) != key_hash(("1",))


@pytest.mark.parametrize(
    "spec, message",
    [("sometimes", "cannot read"), ("every 0 events", "N >= 1"), ({"poisson": -1}, "positive"),
     ({"poison": 1}, "unknown keys"), ([], "empty"), (3.5, "cannot read"),
     ({"poisson": 1, "seed": -2}, "seed")],
)
def test_bad_triggers(spec, message):
    with pytest.raises(InputError, match=message):
        parse_trigger(spec, INTS, 10)


def test_plan_maps_ranks_to_characters():
    plan = plan_of("A(B|G)*A", 3, order="GAB")
    assert plan.chars(np.array([1, 0, 2, 1])) == b"AGBA"
    assert Trigger("end") == plan.trigger


@pytest.mark.parametrize("name", ["flights", "stocks", "synthetic"])
def test_examples_validate(name):
    cfg = load_config(EXAMPLES / f"{name}.toml")
    assert cfg.input.dataset == name and cfg.mode == "batch"


BASE = {
    "input": {"dataset": "flights", "timestamp": "time_hour"},
    "characters": {"D": "dep_delay > 60"},
    "query": {"regex": "DD", "window": "1 day"},
    "output": {"path": "out"},
}


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"query": {"regex": "DD", "window": [1]}}, "query.window: Input should be a valid integer"),
        ({"query": {"regex": "DD", "windw": 1}}, "query.windw: unknown key"),
        ({"summary": {"size": 0}}, "summary.size: Input should be greater than or equal to 1"),
        ({"summary": {"strategy": "best"}}, "summary.strategy: Input should be 'suse', 'present'"),
        ({"query": [{"regex": "A", "window": 1}, {"regx": "B", "window": 1}]}, "query[1].regx: unknown key"),
        ({"input": {"timestamp": "t"}}, "input: give exactly one of 'dataset'"),
        ({"input": {"dataset": "flights"}}, "input.timestamp: Field required"),
        ({"mode": "streaming"}, "needs a [streaming] table"),
        ({"evaluate": {"exact": "maybe"}}, "evaluate.exact: Input should be a valid boolean"),
    ],
)
def test_config_errors_name_the_key(change, expected):
    with pytest.raises(ConfigError) as err:
        parse_config({**BASE, **change}, "job.toml")
    assert expected in str(err.value)
    assert str(err.value).startswith("job.toml is not a valid job:")


def test_every_kernel_strategy_is_a_valid_job_setting():
    for name in suse.api.STRATEGIES:  # the job schema follows the kernel's list (adaptive included)
        assert parse_config({**BASE, "summary": {"strategy": name}}, "job.toml").summary.strategy == name


def test_config_file_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\n[input\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="no such job file"):
        load_config(tmp_path / "missing.toml")
