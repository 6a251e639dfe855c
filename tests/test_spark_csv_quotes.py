"""Issue 26, item 7: a job's CSV input and `suse exact` read one file alike (RFC 4180: a quote
inside a quoted field is doubled), so a partition key or a row never differs between them."""
from __future__ import annotations

import csv

import pytest

pytest.importorskip("pyspark")

from suse.io.formats import read_csv_stream  # noqa: E402
from suse.spark.jobs.load import parse_config  # noqa: E402
from suse.spark.jobs.run import load_input  # noqa: E402

# Spark's default escape (a backslash) read '"a"",B,9"' as two fields and the timestamp as '9"'.
ROWS = ['key,char,timestamp', '""">x",A,1', '"a"",B,9",B,2', '"x""y",C,3', 'plain,A,4', '"""",B,5', '"a,b",A,6']


def test_a_job_and_the_cli_read_quoted_fields_alike(spark, tmp_path):
    path = tmp_path / "quoted.csv"
    path.write_text("\n".join(ROWS) + "\n")
    cfg = parse_config({
        "input": {"path": str(path), "format": "csv", "timestamp": "timestamp", "partition_by": "key"},
        "characters": "char", "query": {"regex": "AB", "window": 5}, "output": {"path": str(tmp_path / "out")},
    })
    rows = [tuple(r) for r in load_input(spark, cfg).select("key", "char", "timestamp").collect()]
    events = read_csv_stream(path)
    assert [(c, t) for _, c, t in rows] == [(c, t) for c, t, _ in events]
    with open(path, newline="") as f:  # the keys as RFC 4180 reads them
        assert [k for k, _, _ in rows] == [row[0] for row in list(csv.reader(f))[1:]]
    assert [k for k, _, _ in rows][:3] == ['">x', 'a",B,9', 'x"y']
