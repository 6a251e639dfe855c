"""Jobs from job files: `suse run`, the bundled examples, streaming jobs, a local cluster."""
from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("pyspark")

from typer.testing import CliRunner  # noqa: E402

from helpers import ROOT, run, synthetic_input  # noqa: E402
from suse.cli import commands  # noqa: E402,F401  (registers `run`)
from suse.cli.app import app  # noqa: E402
from suse.errors import InputError  # noqa: E402
from suse.spark.jobs.load import load_config, parse_config  # noqa: E402
from suse.spark.jobs.run import run_job  # noqa: E402

EXAMPLES = ROOT / "examples"

SYNTHETIC = synthetic_input(400, 3) + """[query]
regex = "a(b*c)*d(e|f)g*"
window = 40
aggregate = "sum"
[summary]
size = 20
[evaluate]
at = "every 100 events"
exact = true
[output]
path = "{out}"
format = "{fmt}"
"""


def job(tmp_path, fmt="parquet", name="out", text=SYNTHETIC):
    path = tmp_path / f"{name}.toml"
    path.write_text(text.format(out=tmp_path / name, fmt=fmt))
    return path


@pytest.mark.parametrize("fmt", ["parquet", "json", "csv"])
def test_batch_job_writes_every_format(spark, tmp_path, fmt):
    report = run_job(load_config(job(tmp_path, fmt)))
    kw = {"header": "true"} if fmt == "csv" else {}
    out = spark.read.format(fmt).options(**kw).load(str(tmp_path / "out"))
    assert out.count() == 12  # 3 streams x (every 100 of 400 events)
    assert {"query", "stream", "evaluated_at", "count", "exact_count", "elements"} <= set(out.columns)
    assert report.output == str(tmp_path / "out") and len(report.top) == 3
    assert all(int(r["count"]) <= int(r["exact_count"]) for r in report.top)


def test_cli_runs_a_job_and_prints_the_largest_partitions(spark, tmp_path):
    result = CliRunner().invoke(app, ["run", str(job(tmp_path))], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "largest partitions" in result.stdout and f"output: {tmp_path / 'out'}" in result.stdout


@pytest.mark.parametrize(
    "change, message",
    [
        (("window = 40", "window = '40 days'"), "is a duration but timestamp column 'ts' holds integers"),
        (("size = 20", "size = 'big'"), "summary.size: Input should be a valid integer"),
        (('characters = "symbol"', 'characters = {{ a = "symbol = = 1", d = "true", e = "true" }}'),
         "character a: invalid predicate"),
        (('timestamp = "ts"', 'timestamp = "time"'), "input.timestamp: column 'time' is not in the input"),
        (("[query]", "[querry]"), "querry: unknown key"),
    ],
)
def test_cli_errors_are_one_clear_message(spark, tmp_path, change, message):
    text = SYNTHETIC.replace(*change)
    result = CliRunner().invoke(app, ["run", str(job(tmp_path, text=text))], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert message in " ".join(result.output.split()) and "Traceback" not in result.output


def test_stocks_example(spark, tmp_path):
    cfg = load_config(EXAMPLES / "stocks.toml")
    cfg.output.path = str(tmp_path / "stocks")
    report = run_job(cfg)
    out = spark.read.parquet(cfg.output.path)
    assert {r.query for r in out.select("query").distinct().collect()} == {"Q0", "Q1"}
    assert {r.ticker for r in out.select("ticker").distinct().collect()} == {"AAPL", "FB", "GOOG", "IBM", "MSFT"}
    assert report.top and all(int(r["count"]) <= int(r["exact_count"]) for r in report.top)


def test_flights_example_on_two_aircraft(spark, tmp_path):
    cfg = load_config(EXAMPLES / "flights.toml")
    cfg.input.filter = "tailnum IN ('N725MQ', 'N13908')"
    cfg.output.path = str(tmp_path / "flights")
    report = run_job(cfg)
    assert {r["tailnum"] for r in report.top} == {"N725MQ", "N13908"}
    rows = spark.read.parquet(cfg.output.path).collect()
    assert len(rows) > 10 and all(int(r["count"]) <= int(r.exact_count) for r in rows)


STREAMING = """
name = "streaming job"
mode = "streaming"
[input]
path = "{src}"
format = "csv"
schema = "k string, t long, x long"
timestamp = "t"
partition_by = "k"
[characters]
A = "x < 3"
B = "x >= 3"
[query]
regex = "AB+"
window = 20
[summary]
size = 8
[output]
path = "{out}"
format = "json"
[streaming]
checkpoint = "{ckpt}"
lateness = 5
"""


def test_streaming_job_resumes_where_it_stopped(spark, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    text = STREAMING.format(src=src, out=tmp_path / "out", ckpt=tmp_path / "ckpt")
    cfg = parse_config(__import__("tomllib").loads(text))
    frames = [pd.DataFrame({"k": list("pqpq"), "t": [i * 10 + j for j in range(4)], "x": [0, 1, 4, 5]}) for i in range(3)]
    frames[0].to_csv(src / "a.csv", index=False)
    first = run_job(cfg)
    for i, f in enumerate(frames[1:]):
        f.to_csv(src / f"b{i}.csv", index=False)  # CSV inputs have a header unless options say not
    second = run_job(cfg)
    assert first.batches == 1 and second.batches == 1
    final = {r["k"]: r for r in second.top}
    assert final["p"]["events"] == 6 and final["q"]["events"] == 6
    from suse.spark import aggregate

    batch = aggregate(spark.createDataFrame(pd.concat(frames)), "AB+", 20, {"A": "x < 3", "B": "x >= 3"}, "t",
                      ["k"], summary_size=8)
    assert {r.k: r["count"] for r in batch.collect()} == {k: r["count"] for k, r in final.items()}


def test_streaming_job_evaluates_at_due_times(spark, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    text = STREAMING.format(src=src, out=tmp_path / "out", ckpt=tmp_path / "ckpt") + "[evaluate]\nat = { every = 10 }\n"
    cfg = parse_config(__import__("tomllib").loads(text))
    frames = pd.DataFrame({"k": list("pqpq") * 3, "t": [i * 10 + j for i in range(3) for j in range(4)],
                           "x": [0, 1, 4, 5] * 3})
    frames.to_csv(src / "a.csv", index=False)
    run_job(cfg)
    rows = spark.read.json(str(tmp_path / "out")).toPandas()
    # the watermark (newest - lateness 5) has passed 0 and 10; q starts at t = 1
    assert {(0, "p"), (10, "p"), (10, "q")} <= set(zip(rows.evaluated_at, rows.k))
    assert not rows.duplicated(["k", "evaluated_at"]).any() and (rows.evaluated_at % 10 == 0).all()
    from suse.spark import aggregate

    batch = aggregate(spark.createDataFrame(frames), "AB+", 20, {"A": "x < 3", "B": "x >= 3"}, "t", ["k"],
                      summary_size=8, evaluate=sorted(set(rows.evaluated_at.tolist())))
    want = {(r.k, r.evaluated_at): (r["count"], r.events) for r in batch.collect()}
    assert {(r["k"], r["evaluated_at"]): (str(r["count"]), r["events"]) for r in rows.to_dict("records")} == {
        key: want[key] for key in zip(rows.k, rows.evaluated_at)}


def test_streaming_job_rejects_batch_only_options(spark, tmp_path):
    text = STREAMING.format(src=tmp_path, out=tmp_path / "out", ckpt=tmp_path / "ckpt")
    with pytest.raises(InputError, match="evaluate"):  # when the file is read, before Spark
        parse_config(__import__("tomllib").loads(text + "\n[evaluate]\nexact = true\n"))


def test_large_partitions_and_lean_rows_in_job_files(spark, tmp_path):
    gathered = run_job(load_config(job(tmp_path, name="gathered")))
    streamed = run_job(load_config(job(tmp_path, name="streamed", text=SYNTHETIC.replace(
        'partition_by = ["stream"]\n', 'partition_by = ["stream"]\nlarge_partitions = true\n', 1))))
    read = [sorted(map(str, spark.read.parquet(str(tmp_path / n)).drop("elements").collect())) for n in ("gathered", "streamed")]
    assert read[0] == read[1] and len(read[0]) == 12 and gathered.top == streamed.top
    lean = run_job(load_config(job(tmp_path, fmt="csv", name="lean", text=SYNTHETIC + "elements = false\n")))
    written = spark.read.option("header", "true").csv(str(tmp_path / "lean"))
    assert "elements" not in written.columns and written.count() == 12 and lean.top == gathered.top
    text = STREAMING.format(src=tmp_path, out=tmp_path / "out", ckpt=tmp_path / "ckpt")
    with pytest.raises(InputError, match="elements = false is for batch jobs"):
        parse_config(__import__("tomllib").loads(text.replace('format = "json"\n', 'format = "json"\nelements = false\n')))
    with pytest.raises(InputError, match="large_partitions is for batch jobs"):
        parse_config(__import__("tomllib").loads(text.replace('partition_by = "k"\n', 'partition_by = "k"\nlarge_partitions = true\n', 1)))


def test_local_cluster_equals_local(spark, tmp_path):
    """Executors in separate processes (local-cluster): the job must give the local result."""
    path = job(tmp_path, name="cluster")
    proc = run("run", str(path), "--master", "local-cluster[2,1,1024]", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "largest partitions" in proc.stdout
    run_job(load_config(job(tmp_path, name="local")))
    cols = ["stream", "evaluated_at", "count", "sum", "exact_count", "elements"]
    cluster = spark.read.parquet(str(tmp_path / "cluster")).select(cols).orderBy("stream", "evaluated_at").collect()
    local = spark.read.parquet(str(tmp_path / "local")).select(cols).orderBy("stream", "evaluated_at").collect()
    assert cluster == local and len(local) == 12


def test_errors_inside_python_workers_come_back_clean(spark, tmp_path):
    text = SYNTHETIC.replace('partition_by = ["stream"]', 'partition_by = ["stream"]\nvalue = "v"\n'
                             '[input.columns]\nv = "CASE WHEN ts = 5 THEN NULL ELSE value END"')
    result = CliRunner().invoke(app, ["run", str(job(tmp_path, text=text))], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert "value column 'v' is NULL in partition stream=" in result.output and "Traceback" not in result.output
    assert '"ts":5' in result.output and '"v":null' in result.output  # the row
