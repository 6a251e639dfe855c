"""The Python API with input a user can easily give: evaluation times before processed events,
probabilities, datetimes of every unit, pandas frames and events given positionally."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

import suse
from suse.io.formats import read_probabilities

STREAM = [("A", 1), ("B", 2), ("A", 3), ("B", 10)]


# ---------------------------------------------------- 14: evaluate_at before processed events
@pytest.mark.parametrize("engine", ["summary", "exact"])
def test_evaluating_before_events_already_processed_is_an_error(engine):
    q = suse.Query("AB", window=100)
    s = suse.Summary(q, size=10, seed=1) if engine == "summary" else suse.Exact(q)
    s.extend(STREAM)
    with pytest.raises(suse.InputError, match="evaluation time 5 is earlier than timestamp 10, the latest already"):
        s.extend([("B", 11)], evaluate_at=[5])
    # Nothing changed, and times from the last processed timestamp on are fine.
    (ev,) = s.extend([("B", 11)], evaluate_at=[10])
    assert ev.count == suse.exact(q, STREAM).count == 3


def test_evaluating_within_the_batch_that_holds_the_events_is_right():
    q = suse.Query("AB", window=100)
    s = suse.Summary(q, size=10, seed=1)
    (ev,) = s.extend(STREAM, evaluate_at=[5])
    assert ev.count == 1  # A1 B2: the truth at t <= 5


# ------------------------------------------------------------------------ 15: probabilities
@pytest.mark.parametrize(
    "probabilities, message",
    [
        ({"AB": 1.0}, "probability given for 'AB', which is not a character of the query"),
        ({"": 1.0}, "probability given for '', which is not a character of the query"),
        ({"A": 1.0}, "no probability for 'B'"),
        ({"A": 0.5, "B": 0.6}, r"must sum to 1 \(within 1e-6\), they sum to 1.1"),
        ({"A": np.float64(1.5), "B": -0.5}, "must be a finite non-negative number, got -0.5"),
        ({1: 1.0}, "probability given for 1"),
    ],
)
def test_probabilities_must_name_every_query_letter_once(probabilities, message):
    with pytest.raises(suse.InputError, match=message):
        suse.Summary(suse.Query("AB", window=10), size=3, probabilities=probabilities)


def test_the_cli_file_and_the_api_share_the_check():
    assert read_probabilities("A 0.25 B 0.75") == {"A": 0.25, "B": 0.75}
    with pytest.raises(suse.InputError, match="they sum to 1.1"):
        read_probabilities("A 0.5 B 0.6")
    q = suse.Query("AB", window=10)
    with pytest.raises(suse.InputError, match="no probability for 'B'"):
        suse.api.check_probabilities(read_probabilities("A 1"), q.alphabet)


def test_zero_is_allowed_for_a_letter_that_never_occurs():
    s = suse.Summary(suse.Query("AB|C", window=10), size=3, probabilities={"A": 0.5, "B": 0.5, "C": 0})
    s.extend(STREAM)
    assert s.probabilities == {"A": 0.5, "B": 0.5, "C": 0.0}


# ------------------------------------------------------------------------ 16: date-times
SECONDS = [0, 5, 2000]  # A at 0 s, B at 5 s, B at 2000 s
ISO = ["2024-01-01T00:00:00", "2024-01-01T00:00:05", "2024-01-01T00:33:20"]


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_every_datetime64_unit_is_read_as_seconds(unit):
    q = suse.Query("AB", window=1000)
    stamps = np.array(ISO, dtype=f"datetime64[{unit}]")
    r = suse.exact(q, chars="ABB", timestamps=stamps, evaluate_at=np.array(ISO[1:2], dtype=f"datetime64[{unit}]"))
    assert r.count == 1  # only B at 5 s is within 1000 s of A
    base = int(np.datetime64(ISO[0], "s").astype(np.int64))
    assert r.evaluations[0].timestamp == base + 5


def test_pandas_datetime_series_and_datetime_objects():
    q = suse.Query("AB", window=1000)
    naive = pd.Series(pd.to_datetime(ISO))
    aware = naive.dt.tz_localize("Europe/Berlin")  # one hour ahead of UTC in January
    assert suse.exact(q, chars="ABB", timestamps=naive).count == 1
    assert suse.exact(q, chars="ABB", timestamps=aware).count == 1
    objects = [dt.datetime.fromisoformat(t) for t in ISO]
    assert suse.exact(q, list(zip("ABB", objects))).count == 1
    # naive is UTC; the aware series is the same wall-clock time an hour earlier
    s = suse.Summary(q, size=5, seed=1)
    s.extend(chars="ABB", timestamps=aware)
    assert s.elements()[0][1] == int(np.datetime64(ISO[0], "s").astype(np.int64)) - 3600


def test_sub_second_times_round_down_and_missing_times_are_errors():
    q = suse.Query("AB", window=0)
    stamps = np.array(["2024-01-01T00:00:00.100", "2024-01-01T00:00:00.900"], dtype="datetime64[ms]")
    assert suse.exact(q, chars="AB", timestamps=stamps).count == 1  # both in the same second
    with pytest.raises(suse.InputError, match="event 1: timestamp is missing"):
        suse.exact(q, chars="AB", timestamps=np.array(["2024-01-01", "NaT"], dtype="datetime64[s]"))
    with pytest.raises(suse.InputError, match="values must be integers, got date-times"):
        suse.exact(q, chars="AB", timestamps=[1, 2], values=stamps)


# ------------------------------------------------------------------------ 17: loose ends
def test_summary_extend_takes_events_positionally_like_exact():
    q = suse.Query("AB", window=100)
    s = suse.Summary(q, size=10, seed=1)
    s.extend([("A", 1), ("B", 2, 7)])
    assert s.result().count == 1 and s.elements() == [("A", 1, 1), ("B", 2, 7)]
    with pytest.raises(suse.InputError, match="got characters but no timestamps"):
        suse.Summary(q, size=10).extend("AB")


def test_a_pandas_frame_of_events():
    q = suse.Query("AB", window=100)
    frame = pd.DataFrame({"char": ["A", "B", "A", "B"], "timestamp": [1, 2, 3, 10], "value": [1, 2, 3, 4]})
    r = suse.exact(q, frame)
    assert (r.count, r.sum) == (3, 3 + 5 + 7)
    s = suse.Summary(q, size=10, seed=1)
    s.extend(frame.rename(columns={"char": "Char"}))
    assert (s.result().count, s.result().sum) == (3, 15)
    with pytest.raises(suse.InputError, match="no column 'timestamp'"):
        suse.exact(q, frame.rename(columns={"timestamp": "time"}))


@pytest.mark.parametrize("engine", ["exact", "summary"])
def test_results_line_up_with_unsorted_evaluation_times(engine):
    q = suse.Query("AB", window=100)
    times = [10, 1, 3, 2, 10]
    if engine == "exact":
        evaluations = suse.exact(q, STREAM, evaluate_at=times).evaluations
    else:
        evaluations = suse.Summary(q, size=10, seed=1).extend(STREAM, evaluate_at=times)
    assert [e.timestamp for e in evaluations] == times
    assert [e.count for e in evaluations] == [3, 0, 1, 1, 3]


def test_messages_show_plain_numbers():
    q = suse.Query("AB", window=10)
    with pytest.raises(suse.InputError) as info:
        suse.exact(q, chars="AB", timestamps=np.array([1.5, 2.0]))
    assert str(info.value) == "event 0: timestamp 1.5 is not an integer" and info.value.event == 0
    with pytest.raises(suse.InputError, match=r"^window must be an integer, got 1\.5$"):
        suse.Query("AB", window=np.float64(1.5))
    with pytest.raises(suse.InputError, match=r"^event 1: value -3 is negative"):
        suse.exact(q, chars="AB", timestamps=[1, 2], values=np.array([1, -3]))


def test_decreasing_timestamps_name_the_event_also_across_batches():
    s = suse.Summary(suse.Query("AB", window=10), size=3)
    s.extend([("A", 5)])
    with pytest.raises(suse.InputError, match="^event 0: timestamp 4 is earlier than the previous timestamp 5") as info:
        s.extend([("B", 4)])
    assert info.value.event == 0
    with pytest.raises(suse.InputError, match="^event 2: timestamp 1 is earlier than the previous timestamp 7"):
        suse.exact(s.query, [("A", 5), ("B", 7), ("A", 1)])


def test_numpy_scalar_evaluation_times():
    # Found by the bad-input suite: numpy float scalars have a dtype but no length.
    q = suse.Query("AB", 10)
    events = [("A", 1), ("B", 2)]
    assert [e.count for e in suse.exact(q, events, evaluate_at=np.float64(2.0)).evaluations] == [1]
    with pytest.raises(suse.InputError, match="not an integer"):
        suse.exact(q, events, evaluate_at=np.float64(1.5))
