"""The live page as a person uses it: `suse serve` in a subprocess, Debian's Chromium driven by
Playwright (never a downloaded browser). Each view is written as a screenshot and checked to
be non-blank."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from PIL import Image

from serving import Server
from test_dashboard import JOB

pytestmark = pytest.mark.slow  # the module starts `suse serve` (Spark) once: about 40 s in all

CHROMIUM = os.environ.get("SUSE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--port", "0", "--speed", "150/s", "--strategies", "fifo", "--refresh", "0"]


@pytest.fixture(scope="module")
def served(spark, tmp_path_factory):
    """The job's batch output (from `suse run`'s code, on the shared session) and a server."""
    from suse.spark.jobs.load import load_config
    from suse.spark.jobs.run import run_job

    work = tmp_path_factory.mktemp("serve")
    (work / "job.toml").write_text(JOB.format(out="out"))
    server = Server(work, ARGS)
    cfg = load_config(work / "job.toml")
    cfg.spark.master, cfg.output.path = None, str(work / "batch")
    run_job(cfg)
    rows = spark.read.parquet(str(work / "batch")).toPandas()
    expected = {str(r["stream"]): (r["count"], r["exact_count"], int(r["events"])) for _, r in rows.iterrows()}
    holder = {"server": server, "expected": expected, "work": work}
    yield holder
    holder["server"].proc.poll() is None and holder["server"].stop()


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}: `make browser` installs Debian's chromium (or set SUSE_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser, served):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    served["server"].wait_finished()
    page.goto(served["server"].url)
    page.wait_for_selector("#partitions tbody tr")
    yield page
    context.close()
    assert not errors, errors  # no JavaScript error on any view


def evaluations(page) -> int:
    return int(page.inner_text("#evaluations"))


def shot(page, path: Path) -> None:
    page.screenshot(path=str(path))
    image = Image.open(path).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20) or []
    white = sum(n for n, c in colours if min(c) > 245)
    assert len(colours) > 30, f"{path} has {len(colours)} colours: blank?"
    assert white < 0.97 * image.width * image.height, f"{path} is almost all white"


def table(page) -> dict[str, tuple[str, str, int]]:
    rows = {}
    for tr in page.query_selector_all("#partitions tbody tr"):
        cells = tr.query_selector_all("td")
        # partition, events, count (suse), count (fifo), exact count, recall
        rows[cells[0].inner_text()] = (cells[2].get_attribute("data-exact"), cells[4].get_attribute("data-exact"),
                                       int(cells[1].inner_text()))
    return rows


def test_table_is_the_job_output(page, served):
    before = evaluations(page)
    page.click("#refresh")  # at the end of the replay: the batch job's evaluation "end"
    page.wait_for_function(f"Number(document.querySelector('#evaluations').textContent) > {before}")
    page.wait_for_timeout(200)
    assert table(page) == served["expected"]
    assert page.inner_text("#progress").startswith("replay finished")
    shot(page, served["work"] / "table.png")


def test_match_buttons_wait_for_a_partition(page):
    # `hidden` must win over the toolbar's display: flex (it once did not)
    for button in ("#prev-match", "#next-match"):
        assert not page.is_visible(button), button
    page.click("#partitions tbody tr:has(td.key:text-is('0'))")
    page.wait_for_selector("#next-match", state="visible")
    assert page.is_visible("#prev-match")


def test_search_and_sort(page):
    page.fill("#search", "2")
    page.wait_for_function("document.querySelectorAll('#partitions tbody tr').length === 1")
    assert page.inner_text("#partitions tbody tr td.key") == "2"
    page.fill("#search", "")
    page.click("th[data-sort='exact']")  # descending, compared as exact integers
    exact = [int(td.get_attribute("data-exact")) for td in page.query_selector_all("#partitions tbody tr td:nth-child(5)")]
    assert exact == sorted(exact, reverse=True) and len(exact) == 3
    page.click("th[data-sort='exact']")
    exact = [int(td.get_attribute("data-exact")) for td in page.query_selector_all("#partitions tbody tr td:nth-child(5)")]
    assert exact == sorted(exact)


def points(page) -> int:
    # the first trace of the count chart: one marker per evaluation since the partition's first
    return page.eval_on_selector_all("#chart .scatterlayer .trace:first-child .point", "els => els.length")


def test_partition_view_and_refresh_add_an_evaluation(page, served):
    page.click("#partitions tbody tr:has(td.key:text-is('1'))")
    page.wait_for_selector("#chart .scatterlayer .point")
    assert page.inner_text("#partition-title") == "partition 1"
    n, before = points(page), evaluations(page)
    legend = page.eval_on_selector("#chart .legend", "e => e.textContent")
    assert "summary (suse)" in legend and "summary (fifo)" in legend and "exact" in legend  # side by side
    page.click("#refresh")
    page.wait_for_function(f"Number(document.querySelector('#evaluations').textContent) === {before + 1}")
    page.wait_for_function(
        f"document.querySelectorAll('#chart .scatterlayer .trace:first-child .point').length === {n + 1}")
    detail = served["server"].get("/api/partition?q=0&pid=1")
    assert detail["series"][-1]["evaluation"] == before  # the new evaluation is the chart's last point
    assert detail["series"][-1]["counts"]["suse"]["exact"] == served["expected"]["1"][0]
    shot(page, served["work"] / "partition.png")


def test_a_chosen_element_highlights_a_match_that_contains_it(page, served):
    page.click("#partitions tbody tr:has(td.key:text-is('0'))")
    page.wait_for_selector("#timeline .scatterlayer .point")
    elements = served["server"].get("/api/partition?q=0&pid=0")["elements"]["suse"]
    # an element that is part of some match: the last element of the first match
    first = served["server"].get("/api/match?q=0&pid=0&n=0")["match"]
    assert first is not None, "the test job should leave matches in partition 0"
    target = first[-1]
    char_trace = "abcdefg".index(elements[target][0])
    index_in_trace = [i for i, e in enumerate(elements) if e[0] == elements[target][0]].index(target)
    box = page.locator(f"#timeline .scatterlayer .trace:nth-child({char_trace + 1}) .point").nth(index_in_trace).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_function(f"document.querySelector('#match-info').textContent.includes('with element {target + 1}')")
    shown = page.inner_text("#match-text")
    c, t, _ = elements[target]
    assert f"{c}@{t}" in shown.split()
    highlighted = page.eval_on_selector_all("#timeline .scatterlayer .trace:last-child .point", "els => els.length")
    assert highlighted == len(shown.split()) - 1  # "match:" and one word per element
    page.click("#next-match")
    page.wait_for_function("document.querySelector('#match-info').textContent.startsWith('match #2') || "
                           "document.querySelector('#match-info').textContent.startsWith('no match #2')")
    shot(page, served["work"] / "match.png")


def test_auto_refresh_evaluates_by_itself(page):
    before = evaluations(page)
    page.select_option("#auto", "2")
    page.wait_for_function(f"Number(document.querySelector('#evaluations').textContent) >= {before + 2}", timeout=9000)


def test_ctrl_c_writes_a_checkpoint_and_the_next_start_resumes(served, browser):
    server = served["server"]
    evaluated = server.get("/api/status")["evaluations"]
    assert server.stop() == 0
    assert "stopped; checkpoint written to out.live" in server.log.read_text()
    assert (served["work"] / "out.live" / "state.json").exists()
    started = time.monotonic()
    again = served["server"] = Server(served["work"], ARGS)
    assert time.monotonic() - started < 30  # no Spark: the classified events are in the checkpoint
    assert f"resumed at evaluation {evaluated}" in again.log.read_text()
    status = again.get("/api/status")
    assert status["evaluations"] == evaluated and status["finished"]
    page = browser.new_page()
    page.goto(again.url)
    page.wait_for_selector("#partitions tbody tr")
    page.wait_for_function(f"Number(document.querySelector('#evaluations').textContent) === {evaluated + 1}")
    assert table(page) == served["expected"]
    page.close()
