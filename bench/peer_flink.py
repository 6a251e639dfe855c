"""FlinkCEP 2.3 side by side with suse: the same stream, the same query, both counts.

FlinkCEP runs from the jars of the `apache-flink-libraries` wheel (`pip install -e ".[flink]"`);
bench/flink/FlinkPeer.java is compiled on first use with javac into a cache directory. Each
case writes the stream to a file, runs it through a FlinkCEP pattern in a local environment
(parallelism 1, event time, timestamp = event index in ms) that counts the matches, runs
`suse.exact` on the same events, checks that the counts agree and prints events/s of both.

Suites (default: paper,abcd,variants):
  paper     the paper's workload: letters drawn Zipf(s=2) over the query's sorted letters,
            timestamp = index; --events x --windows, for each of --paper-patterns
  abcd      ABCD over A^i B^i C^i D^i in one window, i = 8, 16, ... --max-i
  variants  Flink-only patterns for suse's coming negation (`A!EB`) and contiguity
            (`policy="contiguous"`) on a small paper-workload stream; suse joins in as soon
            as it accepts the query and policy.
  predicates  conditions between a match's events: bench/predicates.py's "rising run" AB+C
            (B above the previous B, C below the last B) on its stream (--predicate-events x
            --predicate-windows), FlinkCEP with IterativeConditions reading the partial match
            (ctx.getEventsForPattern), and a third peer: predicates.py's brute-force
            enumerator, capped at --timeout too. Not in the default run; ask for it.
Flink's time per case is capped (--timeout); a case over the cap prints "timed out", and
the larger cases of its series (more events and a window as wide) print "not run" unless
--run-all; after the table, each series says at which window Flink stopped finishing.
A count mismatch (Flink or the enumerator against suse) or a Flink error is printed on
stderr and makes the exit code 1.

Usage: python bench/peer_flink.py [--suite paper,abcd,variants,predicates] [--events 10000,100000]
       [--windows 10,100,1000] [--paper-patterns paper,abcd] [--max-i 256] [--timeout 60]
       [--predicate-events 2000,10000] [--predicate-windows 10,30,100,300,1000]
       [--run-all] [--list]
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Optional, Sequence

import numpy as np

import predicates
from timing import best_time

HERE = Path(__file__).resolve().parent
JAVA_SOURCE = HERE / "flink" / "FlinkPeer.java"
LOG_CONFIG = HERE / "flink" / "log4j2.properties"
JVM_OPTIONS = ("-Xmx6g", "-XX:+UseParallelGC")


class PeerUnavailable(RuntimeError):
    """Java, javac or the Flink jars are missing; the message says how to get them."""


class PeerError(RuntimeError):
    """The Java program failed or answered something unexpected."""


# --------------------------------------------------------------------------- patterns
@dataclass(frozen=True)
class Peer:
    """One query in both systems. `flink` is FlinkPeer's spec (see FlinkPeer.java):
    `>>` followedByAny, `.` next, `!>` notFollowedBy, `!.` notNext, `+:any`
    oneOrMore().allowCombinations(), `+:strict` oneOrMore().consecutive(), `(...)` a group
    pattern; a run of letters is one step matching any of them; `[p>prev]` / `[p<B]` after a
    step is an IterativeCondition on the events' attribute p. `suse` is the query suse
    runs (None: Flink only), with `where` its conditions; `feature` is "stam", "negation",
    "contiguity" or "conditions"."""

    name: str
    flink: str
    suse: Optional[str]
    policy: str = "any"
    feature: str = "stam"
    note: str = ""
    where: Optional[dict] = None


# Skip-till-any-match: followedByAny between steps, allowCombinations inside loops.
# Adding a pattern is one line here.
PATTERNS = {
    p.name: p
    for p in [
        Peer("ABCD", "A >>B >>C >>D", "ABCD"),
        Peer("AB+C", "A >>B+:any >>C", "AB+C"),
        Peer("abcd", "a >>b >>c >>d", "abcd"),
        Peer("ab+c", "a >>b+:any >>c", "ab+c"),
        Peer("ab?c", "a >>b? >>c", "ab?c"),
        Peer("a(b|c)+d", "a >>bc+:any >>d", "a(b|c)+d", note="a one-letter alternation is one step"),
        # The paper's query: a group loop whose body starts with a loop. (A body starting with
        # a single step, as in a(bc)+d, makes Flink emit duplicate matches: see docs/RESULTS.md.)
        Peer("paper", "a >>(b*:any >>c)*:any >>d >>ef >>g*:any", "a(b*c)*d(e|f)g*"),
        # Negation, suse syntax to come: no E strictly between A and B.
        Peer("A!EB", "A !>E >>B", "A!EB", feature="negation", note="notFollowedBy between followedByAny steps"),
        Peer("A!.E>>B", "A !.E >>B", None, feature="negation",
             note="notNext: the event right after A is not E; not suse's A!EB"),
        # Strict contiguity, suse's policy="contiguous" to come.
        Peer("ABCD/contiguous", "A .B .C .D", "ABCD", policy="contiguous", feature="contiguity"),
        Peer("AB+C/contiguous", "A .B+:strict .C", "AB+C", policy="contiguous", feature="contiguity"),
        # Conditions between a match's events: predicates.py's rising run.
        Peer("rising", "A >>B+:any[p>prev] >>C[p<B]", predicates.QUERY, feature="conditions",
             where=predicates.WHERE, note="B above the previous B, C below the last B"),
    ]
}


def flink_within(window: int) -> int:
    """Flink's `within(W)` keeps a match when last - first < W; suse's window is inclusive
    (last - first <= window), so with integer millisecond timestamps W = window + 1."""
    return window + 1


# --------------------------------------------------------------------------- Java side
def flink_lib() -> Path:
    """The directory of the Flink jars inside the installed `apache-flink-libraries` wheel."""
    try:
        dist = importlib.metadata.distribution("apache-flink-libraries")
    except importlib.metadata.PackageNotFoundError:
        raise PeerUnavailable(
            "apache-flink-libraries is not installed: pip install -e '.[flink]' (make install does it)"
        ) from None
    lib = Path(dist.locate_file("pyflink/lib"))
    if not list(lib.glob("flink-cep-*.jar")) or not list(lib.glob("flink-dist-*.jar")):
        raise PeerUnavailable(f"no flink-cep / flink-dist jar in {lib}")
    return lib


def java_tools() -> tuple[str, str]:
    """(java, javac), from JAVA_HOME if set, else from PATH."""
    home = os.environ.get("JAVA_HOME")
    found = []
    for tool in ("java", "javac"):
        path = shutil.which(tool, path=str(Path(home) / "bin")) if home else None
        path = path or shutil.which(tool)
        if path is None:
            raise PeerUnavailable(f"{tool} not found (install a JDK 17, e.g. apt-get install openjdk-17-jdk-headless)")
        found.append(path)
    return found[0], found[1]


def compile_peer() -> Path:
    """Compile FlinkPeer.java once per (source, Flink version); returns the classes dir."""
    lib = flink_lib()
    _, javac = java_tools()
    key = hashlib.sha256(JAVA_SOURCE.read_bytes())
    key.update(",".join(sorted(p.name for p in lib.glob("*.jar"))).encode())
    out = Path(tempfile.gettempdir()) / f"suse-flink-peer-{key.hexdigest()[:16]}"
    if (out / "FlinkPeer.class").exists():
        return out
    staging = Path(tempfile.mkdtemp(prefix="suse-flink-peer-build-"))
    proc = subprocess.run(
        [javac, "-nowarn", "-d", str(staging), "-cp", str(lib / "*"), str(JAVA_SOURCE)],
        capture_output=True, text=True,
    )
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise PeerError(f"javac failed on {JAVA_SOURCE}:\n{proc.stderr.strip()}")
    try:
        staging.rename(out)  # atomic: a concurrent build that won leaves `out` in place
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def write_stream(path: Path, chars: str, timestamps: Sequence[int],
                 p: Optional[Sequence[Optional[int]]] = None) -> Path:
    """The stream file FlinkPeer reads: one "CHAR TIMESTAMP" per line, or "CHAR TIMESTAMP P"
    with the attribute p (None is written "null")."""
    if len(chars) != len(timestamps) or (p is not None and len(p) != len(chars)):
        raise ValueError(f"{len(chars)} characters, {len(timestamps)} timestamps"
                         + ("" if p is None else f", {len(p)} values of p"))
    with open(path, "w") as f:
        if p is None:
            f.writelines(f"{c} {int(t)}\n" for c, t in zip(chars, timestamps))
        else:
            f.writelines(f"{c} {int(t)} {'null' if v is None else int(v)}\n" for c, t, v in zip(chars, timestamps, p))
    return path


@dataclass(frozen=True)
class FlinkCase:
    name: str
    spec: str
    within_ms: Optional[int]  # Flink's exclusive within(); None for no window
    stream: Path


def run_flink(cases: Sequence[FlinkCase], *, timeout: float = 60.0, one_job: bool = False,
              distinct: bool = False, progress: bool = False) -> list[dict]:
    """Run the cases in ONE JVM; one result dict per case, in order.

    Separately (the default) each case is its own job, timed and capped at `timeout` seconds
    by Flink itself (after a timeout the JVM ends and later cases come back "skipped");
    with `one_job`, all cases share one job and one local cluster start
    (the tests' mode), and `distinct` also counts the different event sets among matches.
    `progress` prints a line on stderr as each case finishes.
    """
    if not cases:
        return []
    java, _ = java_tools()
    classes = compile_peer()
    with tempfile.TemporaryDirectory(prefix="suse-flink-cases-") as tmp:
        cases_file = Path(tmp) / "cases.tsv"
        lines = []
        for c in cases:
            for field in (c.name, c.spec, str(c.stream)):
                if "\t" in field or "\n" in field:
                    raise ValueError(f"case field {field!r} contains a tab or newline")
            lines.append(f"{c.name}\t{c.spec}\t{'-' if c.within_ms is None else c.within_ms}\t{c.stream}\n")
        cases_file.write_text("".join(lines))
        # Flink unpacks a 24 MB RPC jar and cluster dirs into java.io.tmpdir on every start:
        # keep them in this run's directory, which is removed afterwards.
        cmd = [java, *JVM_OPTIONS, f"-Djava.io.tmpdir={tmp}", f"-Dlog4j.configurationFile={LOG_CONFIG}",
               "-cp", f"{classes}{os.pathsep}{flink_lib() / '*'}", "FlinkPeer",
               "--timeout", str(timeout)]
        if one_job:
            cmd.append("--one-job")
        if distinct:
            cmd.append("--distinct")
        cmd.append(str(cases_file))
        # Flink caps each job itself; this backstop covers JVM start and a hung cancel.
        backstop = timeout * (1 if one_job else len(cases)) + 120
        err_file = Path(tmp) / "stderr.txt"
        with open(err_file, "w") as err_out:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err_out, text=True,
                                    start_new_session=True)
            killer = threading.Timer(backstop, os.killpg, (proc.pid, signal.SIGKILL))
            killer.start()
            try:
                lines = []
                for line in proc.stdout:  # one line per finished case
                    lines.append(line)
                    if progress and line.startswith("{"):
                        r = json.loads(line)
                        print(f"  flink {r['name']}: {r['status']} {r.get('count', '')}", file=sys.stderr, flush=True)
                proc.wait()
            finally:
                killer.cancel()
        out, err = "".join(lines), err_file.read_text()
        if proc.returncode == -signal.SIGKILL:
            raise PeerError(f"FlinkPeer did not finish within {backstop:.0f} s")
    if proc.returncode != 0:
        raise PeerError(f"FlinkPeer exited with {proc.returncode}: {err.strip()[-2000:]}")
    results = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if [r["name"] for r in results] != [c.name for c in cases]:
        raise PeerError(f"FlinkPeer answered {len(results)} of {len(cases)} cases:\n{out}\n{err}")
    return results


# --------------------------------------------------------------------------- suse side
def suse_query(peer: Peer, window: int):
    """suse's Query for `peer`, or the reason suse cannot run it yet (a string)."""
    import suse

    if peer.suse is None:
        return "no suse query"
    try:
        return suse.Query(peer.suse, window=window, policy=peer.policy, where=peer.where)
    except suse.SuseError as e:
        return f"not in suse yet ({e})"


# --------------------------------------------------------------------------- benchmark
class Workload(NamedTuple):
    """One case of a suite. Cases of a series come in growing size (see measure)."""

    series: str
    workload: str
    peer: Peer
    window: int
    chars: str
    timestamps: Sequence[int]
    p: Optional[Sequence[int]] = None  # the attribute the conditions compare

    def suse_events(self) -> dict:
        """suse.exact's keyword arguments for these events (tuples with attributes when p is set)."""
        if self.p is None:
            return {"chars": self.chars, "timestamps": np.asarray(self.timestamps, dtype=np.int64)}
        return {"events": [(c, int(t), {"p": v}) for c, t, v in zip(self.chars, self.timestamps, self.p)]}


@dataclass
class Row:
    workload: str
    pattern: str
    window: int
    events: int
    flink: dict
    suse_count: Optional[int]
    suse_seconds: Optional[float]
    suse_note: str = ""
    brute: Optional[dict] = None  # the brute-force enumerator, for queries with conditions


SKIPPED = {"status": "skipped", "error": "a smaller case of this series timed out"}


def run_enumerator(case: Workload, events: list, timeout: float) -> dict:
    """predicates.py's brute-force enumerator on the case, capped at `timeout` seconds; a
    result dict shaped like Flink's."""
    start = time.perf_counter()
    count = predicates.enumerate_matches(events, case.window, start + timeout, case.peer.suse, case.peer.where)
    if count is None:
        return {"status": "timeout", "timeout_seconds": timeout}
    return {"status": "ok", "count": count, "seconds": time.perf_counter() - start}


def measure(rows_in: Sequence[Workload], tmp: Path, timeout: float, repeat: int, run_all: bool = False) -> list[Row]:
    """rows_in: each series in growing size. Flink runs each case in its own JVM, then suse
    runs on the same events, then (for queries with conditions) the brute-force enumerator.
    A peer's case at least as large (events and window) as one of the same series and pattern
    that timed out is not run (unless `run_all`): it would only time out too."""
    import suse

    rows = []
    timed_out: dict[str, list] = {"flink": [], "brute": []}

    def capped(peer_name: str, case: Workload, run) -> dict:
        key = (case.series, case.peer.name)
        if not run_all and any(s == key and n <= len(case.chars) and w <= case.window
                               for s, n, w in timed_out[peer_name]):
            return SKIPPED
        result = run()
        if result["status"] == "timeout":
            timed_out[peer_name].append((key, len(case.chars), case.window))
        return result

    for k, case in enumerate(rows_in):
        def flink_run(k=k, case=case):
            path = write_stream(tmp / f"stream{k}.txt", case.chars, case.timestamps, case.p)
            flink_case = FlinkCase(f"{k}: {case.workload} {case.peer.name} window {case.window}",
                                   case.peer.flink, flink_within(case.window), path)
            # One JVM per case: a timed-out Flink task cannot be stopped and would slow later cases.
            result = run_flink([flink_case], timeout=timeout, progress=True)[0]
            path.unlink()
            return result

        row = Row(case.workload, case.peer.name, case.window, len(case.chars), capped("flink", case, flink_run), None, None)
        query = suse_query(case.peer, case.window)
        events = case.suse_events()
        if isinstance(query, str):
            row.suse_note = query
        else:
            row.suse_seconds, result = best_time(lambda: suse.exact(query, **events), repeat)
            row.suse_count = result.count
        if case.peer.where is not None:
            row.brute = capped("brute", case, lambda: run_enumerator(case, events["events"], timeout))
        rows.append(row)
    return rows


def floor_seconds(tmp: Path) -> float:
    """Flink's net runtime for a one-event job: the fixed cost inside every Flink time."""
    path = write_stream(tmp / "floor.txt", "A", [0])
    return run_flink([FlinkCase("floor", "A >>B", 2, path)])[0]["seconds"]


def fmt_count(n: int) -> str:
    return f"{n:,}" if n < 10**12 else f"{n:.3e}"  # suse's counts outgrow any column


def peer_cells(result: dict, events: int, suse_seconds: Optional[float]) -> tuple[str, str, str, str]:
    """A peer's (count, seconds, events/s, ratio to suse) columns."""
    count, seconds, rate, ratio = "", "", "", ""
    if result["status"] == "ok":
        count, seconds = fmt_count(result["count"]), f"{result['seconds']:.3f}"
        rate = f"{events / result['seconds']:,.0f}"
        if suse_seconds:
            ratio = f"{result['seconds'] / suse_seconds:,.0f}x"
    elif result["status"] == "timeout":
        count, seconds = "timed out", f">{result['timeout_seconds']:.0f}"
        if suse_seconds:
            ratio = f">{result['timeout_seconds'] / suse_seconds:,.0f}x"
    elif result["status"] == "skipped":
        count = "not run"
    else:
        count = "error"
    return count, seconds, rate, ratio


def report(rows: list[Row]) -> list[str]:
    """Print the table (with the brute-force enumerator's columns when a row has them) and
    where each peer stops finishing; return the mismatches."""
    mismatches = []
    brute = any(r.brute is not None for r in rows)
    head = (f"{'workload':<24} {'pattern':<16} {'window':>7} {'events':>8} {'flink count':>14} "
            f"{'suse count':>14} {'flink s':>9} {'suse s':>9} {'flink ev/s':>12} {'suse ev/s':>12} {'ratio':>9}")
    if brute:
        head += f" {'brute count':>14} {'brute s':>9} {'brute ev/s':>12} {'ratio':>9}"
    print(head)
    for r in rows:
        fc, fs, fev, ratio = peer_cells(r.flink, r.events, r.suse_seconds)
        sc = fmt_count(r.suse_count) if r.suse_count is not None else r.suse_note[:14] or "-"
        ss = f"{r.suse_seconds:.5f}" if r.suse_seconds is not None else ""
        sev = f"{r.events / r.suse_seconds:,.0f}" if r.suse_seconds else ""
        line = (f"{r.workload:<24} {r.pattern:<16} {r.window:>7} {r.events:>8} {fc:>14} {sc:>14} "
                f"{fs:>9} {ss:>9} {fev:>12} {sev:>12} {ratio:>9}")
        if r.brute is not None:
            bc, bs, bev, bratio = peer_cells(r.brute, r.events, r.suse_seconds)
            line += f" {bc:>14} {bs:>9} {bev:>12} {bratio:>9}"
        print(line)
        if r.flink["status"] == "error":
            print(f"  flink error: {r.flink['error']}", file=sys.stderr)
            mismatches.append(f"{r.workload} {r.pattern}: flink error {r.flink['error']}")
        for peer_name, result in (("flink", r.flink), ("brute force", r.brute)):
            if result and result["status"] == "ok" and r.suse_count is not None and result["count"] != r.suse_count:
                msg = (f"MISMATCH {r.workload} {r.pattern} window={r.window}: "
                       f"{peer_name} {result['count']} != suse {r.suse_count}")
                print(msg, file=sys.stderr)
                mismatches.append(msg)
        if r.suse_note and r.suse_count is None and r.pattern in PATTERNS and PATTERNS[r.pattern].suse:
            print(f"  {r.pattern}: suse {r.suse_note}")
    for line in stopping_points(rows):
        print(line)
    return mismatches


def stopping_points(rows: list[Row]) -> list[str]:
    """Per series of windows (same workload, pattern and events), the largest window each
    peer finished and the smallest it did not."""
    series: dict[tuple, list[Row]] = {}
    for r in rows:
        series.setdefault((r.workload, r.pattern, r.events), []).append(r)
    lines = []
    for (workload, pattern, events), rs in series.items():
        if len(rs) < 2:
            continue
        for peer_name, results in (("FlinkCEP", [(r.window, r.flink) for r in rs]),
                                   ("brute force", [(r.window, r.brute) for r in rs if r.brute is not None])):
            if not results:
                continue
            done = [w for w, res in results if res["status"] == "ok"]
            stopped = [w for w, res in results if res["status"] in ("timeout", "skipped")]
            text = f"  {peer_name} on {pattern}, {workload}, {events:,} events: "
            text += f"finished up to window {max(done):,}" if done else "finished no window"
            text += f"; not within the cap from window {min(stopped):,}" if stopped else "; finished every window"
            lines.append(text)
    return lines


def paper_rows(patterns, events_list, windows, seed):
    from suse.io.synthetic import synthetic_stream

    for n in events_list:
        for name in patterns:
            peer = PATTERNS[name]
            letters = "".join(sorted({c for c in peer.suse if c.isalnum()}))
            stream = synthetic_stream(letters, n, "zipf", 2.0, seed=seed)
            for w in windows:
                yield Workload("paper", f"zipf2 {letters} seed {seed}", peer, w, stream.chars, stream.timestamps)


def abcd_rows(max_i):
    i = 8
    while i <= max_i:
        chars = "A" * i + "B" * i + "C" * i + "D" * i
        yield Workload("abcd", f"A^{i}B^{i}C^{i}D^{i}", PATTERNS["ABCD"], 4 * i, chars, np.arange(4 * i))
        i *= 2


def variant_rows(n, window, seed):
    from suse.io.synthetic import synthetic_stream

    stream = synthetic_stream("ABCDE", n, "uniform", seed=seed)
    for peer in PATTERNS.values():
        if peer.feature not in ("stam", "conditions"):
            yield Workload("variants", f"uniform ABCDE seed {seed}", peer, window, stream.chars, stream.timestamps)


def predicate_rows(events_list, windows, seed):
    """predicates.py's stream (its default shares and values) under the rising run."""
    for n in events_list:
        events = predicates.stream(n, predicates.A_SHARE, predicates.C_SHARE, predicates.VALUES, seed)
        chars, timestamps, attributes = zip(*events)
        workload = f"rising p<{predicates.VALUES} seed {seed}"
        for w in windows:
            yield Workload("predicates", workload, PATTERNS["rising"], w, "".join(chars), timestamps,
                           [a["p"] for a in attributes])


def int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got {text!r}") from None
    if min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="paper,abcd,variants")
    ap.add_argument("--events", type=int_list, default="10000,100000")
    ap.add_argument("--windows", type=int_list, default="10,100,1000")
    ap.add_argument("--paper-patterns", default="paper,abcd")
    ap.add_argument("--max-i", type=int, default=256)
    ap.add_argument("--variant-events", type=int, default=10_000)
    ap.add_argument("--variant-window", type=int, default=100)
    ap.add_argument("--predicate-events", type=int_list, default="2000,10000")
    ap.add_argument("--predicate-windows", type=int_list, default="10,30,100,300,1000")
    ap.add_argument("--timeout", type=float, default=60.0, help="cap on Flink's time per case (s)")
    ap.add_argument("--repeat", type=int, default=3, help="suse runs per case (best is kept)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--run-all", action="store_true",
                    help="run Flink even where a smaller case of the same series timed out")
    ap.add_argument("--list", action="store_true", help="print the named patterns and exit")
    args = ap.parse_args(argv)
    if args.list:
        for p in PATTERNS.values():
            print(f"{p.name:<16} {p.feature:<11} flink: {p.flink:<40} suse: {p.suse!s:<16} "
                  f"policy={p.policy:<10} {p.note}" + (f"; where={p.where}" if p.where else ""))
        return 0
    suites = args.suite.split(",")
    unknown = set(suites) - {"paper", "abcd", "variants", "predicates"} or set(args.paper_patterns.split(",")) - set(PATTERNS)
    if unknown:
        ap.error(f"unknown suite or pattern: {', '.join(sorted(unknown))}")
    if args.timeout <= 0 or args.repeat < 1 or args.variant_events < 1 or args.variant_window < 0:
        ap.error("--timeout, --repeat and --variant-events must be positive, --variant-window >= 0")
    rows_in = []
    if "paper" in suites:
        rows_in += paper_rows(args.paper_patterns.split(","), args.events, args.windows, args.seed)
    if "abcd" in suites:
        rows_in += abcd_rows(args.max_i)
    if "variants" in suites:
        rows_in += variant_rows(args.variant_events, args.variant_window, args.seed)
    if "predicates" in suites:
        rows_in += predicate_rows(args.predicate_events, args.predicate_windows, args.seed)
    import suse

    print(f"FlinkCEP {importlib.metadata.version('apache-flink-libraries')} (local, parallelism 1, event time, "
          f"within = window + 1 ms, cap {args.timeout:.0f} s per case, JVM {' '.join(JVM_OPTIONS)}) "
          f"vs suse {suse.__version__} exact (best of {args.repeat})")
    with tempfile.TemporaryDirectory(prefix="suse-flink-bench-") as tmp:
        print(f"Flink net runtime of a one-event job (fixed cost inside every Flink time): "
              f"{floor_seconds(Path(tmp)):.3f} s")
        mismatches = report(measure(rows_in, Path(tmp), args.timeout, args.repeat, args.run_all))
    print("flink s = Flink's net job runtime (excludes JVM and local cluster start); "
          "ratio = flink s / suse s (brute s / suse s); not run = a smaller case of the same series timed out")
    if mismatches:
        print(f"{len(mismatches)} MISMATCH(ES):\n  " + "\n  ".join(mismatches), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
