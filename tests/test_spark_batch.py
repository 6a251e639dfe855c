"""The batch DataFrame API against the engine run directly per partition (the oracle)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

import suse  # noqa: E402
from suse.errors import InputError, QueryError  # noqa: E402
from suse.spark import aggregate  # noqa: E402

CHARS = {"A": "x < 3", "B": "x >= 3 AND x < 6", "C": "x >= 6 AND x < 9"}  # x = 9: no character
QUERY, WINDOW = "A(B|C)*C", 12


def _classify(pdf: pd.DataFrame) -> pd.DataFrame:
    x = pdf["x"]
    rank = np.select([x < 3, (x >= 3) & (x < 6), (x >= 6) & (x < 9)], [0, 1, 2], -1)
    out = pdf.assign(rank=rank)
    out = out[out["rank"] >= 0].copy()
    out["char"] = np.array(list("ABC"))[out["rank"]]
    return out


@pytest.fixture(scope="module")
def events() -> pd.DataFrame:
    """Three partitions with many equal timestamps; (k, t, character) is unique, so the
    order by (timestamp, character order) is total and the oracle needs no row hash."""
    rng = np.random.default_rng(4)
    rows = [(k, int(t), int(x), int(v)) for k in "pqr" for t, x, v in
            zip(rng.integers(0, 60, 45), rng.integers(0, 10, 45), rng.integers(0, 6, 45))]
    pdf = pd.DataFrame(rows, columns=["k", "t", "x", "v"])
    pdf = pdf.assign(rank=_classify(pdf.assign(x=pdf.x.clip(upper=8)))["rank"])
    pdf = pdf.drop_duplicates(["k", "t", "rank"]).drop(columns="rank")
    return pdf.sample(frac=1, random_state=1).reset_index(drop=True)  # arrival order is scrambled


def oracle(pdf: pd.DataFrame, times_of, size=6, value=True, strategy="suse", exact=False):
    """Per partition: sort, run a Summary directly, evaluate at `times_of(ts)`."""
    q = suse.Query(QUERY, WINDOW)
    out = {}
    for k, g in _classify(pdf).groupby("k"):
        g = g.sort_values(["t", "rank"])
        chars, ts, vals = "".join(g["char"]), g["t"].to_numpy(), g["v"].to_numpy() if value else None
        s = suse.Summary(q, size, strategy, seed=0)
        rows, start = [], 0
        times = times_of(ts)
        ex = suse.exact(q, chars=chars, timestamps=ts, values=vals, evaluate_at=times).evaluations if exact else None
        for i, t in enumerate(times):
            cut = int(np.searchsorted(ts, t, side="right"))
            (ev,) = s.extend(chars[start:cut], ts[start:cut], None if vals is None else vals[start:cut], evaluate_at=[t])
            start = cut
            row = dict(evaluated_at=t, count=str(ev.count), sum=str(ev.sum), detected_count=str(ev.detected_count),
                       events=cut, elements=[tuple(e) for e in s.elements()])
            if exact:
                row.update(exact_count=str(ex[i].count), exact_sum=str(ex[i].sum))
            rows.append(row)
        out[k] = rows
    return out


def collect(df) -> dict:
    out: dict = {}
    for r in df.orderBy("k", "evaluated_at").collect():
        d = r.asDict()
        d["elements"] = [tuple(e) for e in d["elements"]]
        out.setdefault(d.pop("k"), []).append(d)
    return out


def strip(result: dict, keep) -> dict:
    return {k: [{c: r[c] for c in keep} for r in rows] for k, rows in result.items()}


COLS = ["evaluated_at", "count", "sum", "detected_count", "events", "elements"]


def test_end_matches_the_engine_per_partition(spark, events):
    df = spark.createDataFrame(events).repartition(3)
    got = collect(aggregate(df, QUERY, WINDOW, CHARS, "t", ["k"], value="v", summary_size=6))
    want = oracle(events, lambda ts: [int(ts[-1])])
    assert strip(got, COLS) == strip(want, COLS)
    row = got["p"][0]
    assert row["count_double"] == float(row["count"])
    assert row["avg"] == (int(row["sum"]) / int(row["count"]) if int(row["count"]) else None)


def test_adaptive_strategy_matches_the_engine(spark, events):
    df = spark.createDataFrame(events)
    got = collect(aggregate(df, QUERY, WINDOW, CHARS, "t", ["k"], value="v", summary_size=4, strategy="adaptive"))
    assert strip(got, COLS) == strip(oracle(events, lambda ts: [int(ts[-1])], size=4, strategy="adaptive"), COLS)


def test_exact_and_every_n_events(spark, events):
    df = spark.createDataFrame(events)
    out = aggregate(df, QUERY, WINDOW, CHARS, "t", "k", value="v", summary_size=4, strategy="fifo",
                    evaluate="every 7 events", exact=True)
    got = collect(out)
    want = oracle(events, lambda ts: np.unique(np.append(ts[6::7], ts[-1])).tolist(), size=4,
                  strategy="fifo", exact=True)
    cols = COLS + ["exact_count", "exact_sum"]
    assert strip(got, cols) == strip(want, cols)
    assert all(int(r["exact_count"]) >= int(r["count"]) for rows in got.values() for r in rows)


def test_timestamp_list_and_no_values(spark, events):
    df = spark.createDataFrame(events)
    got = collect(aggregate(df, QUERY, WINDOW, CHARS, "t", ["k"], summary_size=5, evaluate=[-5, 20, 40, 500]))
    want = oracle(events, lambda ts: [-5, 20, 40, 500], size=5, value=False)
    assert strip(got, COLS) == strip(want, COLS)
    assert got["p"][0]["count"] == "0" and got["p"][0]["elements"] == []


def test_poisson_triggers_are_reproducible(spark, events):
    df = spark.createDataFrame(events)
    kw = dict(partition_by=["k"], evaluate={"poisson": 1, "per": 6, "seed": 2})
    a = collect(aggregate(df, QUERY, WINDOW, CHARS, "t", **kw))
    b = collect(aggregate(df.repartition(2), QUERY, WINDOW, CHARS, "t", **kw))
    assert a == b
    assert all(5 <= len(rows) <= 20 for rows in a.values())  # about 60 / 6 evaluations each


def test_ties_do_not_depend_on_arrival_or_layout(spark):
    """Equal (timestamp, character) with different payloads: the row hash orders them,
    whatever the input order and partitioning."""
    rows = [("p", t, 1, v) for t in range(5) for v in range(4)] + [("p", 5, 7, 1)]
    pdf = pd.DataFrame(rows, columns=["k", "t", "x", "v"])
    results = []
    for seed in range(3):
        shuffled = pdf.sample(frac=1, random_state=seed)
        df = spark.createDataFrame(shuffled).repartition(seed + 1)
        out = aggregate(df, "A+C", 10, CHARS, "t", ["k"], value="v", summary_size=3, strategy="fifo")
        results.append(collect(out))
    assert results[0] == results[1] == results[2]
    kept = results[0]["p"][0]["elements"]
    assert [e[1] for e in kept] == sorted(e[1] for e in kept)


def test_character_order_breaks_ties(spark):
    # At t=1 both predicates hold for the same row: the first (A) wins. B and A at t=2 are
    # ordered A first (character order), so "AB" matches {A@1, B@2}... and A@2 then B@2.
    pdf = pd.DataFrame({"k": ["p"] * 4, "t": [1, 2, 2, 3], "x": [0, 5, 1, 9]})
    out = aggregate(spark.createDataFrame(pdf), "AB", 5, {"A": "x < 3", "B": "x < 6"}, "t", ["k"])
    row = out.collect()[0]
    assert [tuple(e) for e in row["elements"]] == [("A", 1, 1), ("A", 2, 1), ("B", 2, 1)]
    assert row["count"] == "2"  # A@1 B@2 and A@2 B@2 (equal timestamps keep that order)


def test_counts_beyond_64_bits_are_exact(spark):
    pdf = pd.DataFrame({"t": np.arange(70), "x": 0})
    row = aggregate(spark.createDataFrame(pdf), "A+", 100, {"A": "x = 0"}, "t", summary_size=80).collect()[0]
    assert row["count"] == str(2**70 - 1) and row["detected_count"] == str(2**70 - 1)
    assert row["count_double"] == float(2**70 - 1)


def test_window_functions_and_dates(spark):
    """The paper's NASDAQ classes: volume above the 90th percentile per ticker."""
    from bokeh_sampledata import stocks

    pdf = stocks.data[stocks.data.ticker.isin(["FB", "IBM"])].copy()
    pdf = pdf[pdf.date >= "2012-01-01"]
    chars = {"G": "volume > percentile_approx(volume, 0.9) OVER (PARTITION BY ticker)",
             "A": "close > open * 1.005", "B": "close < open * 0.995"}
    out = aggregate(spark.createDataFrame(pdf), "A(B|G)*A", "10 days", chars, "date", ["ticker"],
                    summary_size=30, exact=True)
    got = {r.ticker: r for r in out.collect()}
    for ticker, g in pdf.groupby("ticker"):
        g = g.sort_values("date")
        p90 = spark.createDataFrame(g[["volume"]]).selectExpr("percentile_approx(volume, 0.9)").first()[0]
        char = np.select([g.volume > p90, g.close > g.open * 1.005, g.close < g.open * 0.995], list("GAB"), "")
        keep = char != ""
        ts = (g.date[keep].astype("int64") // 10**9).to_numpy()
        q = suse.Query("A(B|G)*A", 10 * 86400)
        chars_ = "".join(char[keep])
        s = suse.Summary(q, 30, seed=0)
        (ev,) = s.extend(chars_, ts, evaluate_at=[int(ts[-1])])
        assert got[ticker]["count"] == str(ev.count)
        assert got[ticker]["exact_count"] == str(suse.exact(q, chars=chars_, timestamps=ts).count)
        assert got[ticker]["evaluated_at"] == g.date.iloc[-1].to_pydatetime()


def test_string_timestamps_with_a_format(spark):
    pdf = pd.DataFrame({"when": ["01/02/2024 10:00", "01/02/2024 11:30", "02/02/2024 09:00"], "x": [0, 4, 7]})
    out = aggregate(spark.createDataFrame(pdf), "AB*C", "1 day", CHARS, "when", timestamp_format="dd/MM/yyyy HH:mm")
    row = out.collect()[0]
    assert row["count"] == "2" and [e[1] for e in row["elements"]] == [1706781600, 1706787000, 1706864400]


def test_replicated_characters_join_every_partition(spark):
    # R events carry no useful key: they are copied into p and q (but create no partition).
    pdf = pd.DataFrame({"k": ["p", "q", "z", "p", "q"], "t": [1, 2, 3, 4, 5], "x": [0, 0, 9, 5, 5]})
    chars = {"R": "k = 'z'", "A": "x < 3", "B": "x >= 3"}
    out = aggregate(spark.createDataFrame(pdf), "ARB", 10, chars, "t", ["k"], replicate=["R"])
    got = {r.k: ([tuple(e) for e in r.elements], r["count"]) for r in out.collect()}
    assert got == {
        "p": ([("A", 1, 1), ("R", 3, 1), ("B", 4, 1)], "1"),
        "q": ([("A", 2, 1), ("R", 3, 1), ("B", 5, 1)], "1"),
    }


def test_estimated_probabilities(spark, events):
    df = spark.createDataFrame(events)
    out = aggregate(df, QUERY, WINDOW, CHARS, "t", ["k"], probabilities="estimate")
    assert out.count() == 3


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(characters={"A": "x <"}), "character A: invalid predicate 'x <'"),
        (dict(characters={"A": "nosuch > 1"}), "character A: invalid predicate 'nosuch > 1'"),
        (dict(characters={"A": "x + 1"}), "character A: predicate 'x + 1' gives bigint, not a boolean"),
        (dict(characters={"AB": "x > 1"}), "must be one ASCII letter or digit"),
        (dict(timestamp="time"), "timestamp column 'time' not found"),
        (dict(partition_by=["key"]), "partition column 'key' not found"),
        (dict(value="val"), "value column 'val' not found"),
        (dict(value="k"), "value column 'k' has type string"),
        (dict(window="3 days"), "is a duration but timestamp column 't' holds integers"),
        (dict(evaluate="hourly"), "evaluate: cannot read 'hourly'"),
        (dict(summary_size=0), "size must be at least 1"),
        (dict(strategy="best"), "strategy must be one of"),
        (dict(replicate=["C"], partition_by=[]), "replicate needs partition_by"),
        (dict(probabilities="guess"), "probabilities must be"),
    ],
)
def test_clear_errors(spark, events, kwargs, message):
    df = spark.createDataFrame(events.head(5))
    args = dict(query=QUERY, window=WINDOW, characters=CHARS, timestamp="t", partition_by=["k"], value="v")
    args.update(kwargs)
    with pytest.raises(InputError) as err:
        aggregate(df, **args)
    assert message in str(err.value)


def test_query_errors_keep_their_position(spark, events):
    with pytest.raises(QueryError) as err:
        aggregate(spark.createDataFrame(events.head(3)), "A(B", 5, CHARS, "t")
    assert err.value.position >= 0


def test_timestamp_column_types(spark):
    df = spark.createDataFrame(pd.DataFrame({"t": [1.5], "x": [0]}))
    with pytest.raises(InputError, match="has type double"):
        aggregate(df, "A", 1, CHARS, "t")
    dates = spark.createDataFrame(pd.DataFrame({"d": pd.to_datetime(["2024-01-01"]).date, "x": [0]}))
    with pytest.raises(InputError, match="holds date-times"):
        aggregate(dates, "A", 1, CHARS, "d")
    row = aggregate(dates, "A", "1 day", CHARS, "d").collect()[0]
    assert row["count"] == "1" and row["elements"][0]["timestamp"] == 1704067200
