"""FlinkCEP 2.3 side by side with suse: the same stream, the same query, both counts.

FlinkCEP runs from the jars of the `apache-flink-libraries` wheel (`pip install -e ".[flink]"`);
bench/flink/FlinkPeer.java is compiled on first use with javac into a cache directory. Each
case writes the stream to a file, runs it through a FlinkCEP pattern in a local environment
(parallelism 1, event time, timestamp = event index in ms) that counts the matches, runs
`suse.exact` on the same events, checks that the counts agree and prints events/s of both.

Suites (default: all):
  paper     the paper's workload: letters drawn Zipf(s=2) over the query's sorted letters,
            timestamp = index; --events x --windows, for each of --paper-patterns
  abcd      ABCD over A^i B^i C^i D^i in one window, i = 8, 16, ... --max-i
  variants  Flink-only patterns for suse's coming negation (`A!EB`) and contiguity
            (`policy="contiguous"`) on a small paper-workload stream; suse joins in as soon
            as it accepts the query and policy.
Flink's time per case is capped (--timeout); a case over the cap prints "timed out", and
the larger cases of its series (more events and a window as wide) print "not run" unless
--run-all. A count mismatch or a Flink error is printed on stderr and makes the exit code 1.

Usage: python bench/peer_flink.py [--suite paper,abcd,variants] [--events 10000,100000]
       [--windows 10,100,1000] [--paper-patterns paper,abcd] [--max-i 256] [--timeout 60]
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
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

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
    pattern; a run of letters is one step matching any of them. `suse` is the query suse
    runs (None: Flink only); `feature` is "stam", "negation" or "contiguity"."""

    name: str
    flink: str
    suse: Optional[str]
    policy: str = "any"
    feature: str = "stam"
    note: str = ""


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


def write_stream(path: Path, chars: str, timestamps: Sequence[int]) -> Path:
    """The stream file FlinkPeer reads: one "CHAR TIMESTAMP" per line."""
    if len(chars) != len(timestamps):
        raise ValueError(f"{len(chars)} characters but {len(timestamps)} timestamps")
    with open(path, "w") as f:
        f.writelines(f"{c} {int(t)}\n" for c, t in zip(chars, timestamps))
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
        return suse.Query(peer.suse, window=window, policy=peer.policy)
    except suse.SuseError as e:
        return f"not in suse yet ({e})"


# --------------------------------------------------------------------------- benchmark
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


def measure(rows_in, tmp: Path, timeout: float, repeat: int, run_all: bool = False) -> list[Row]:
    """rows_in: (series, workload, Peer, window, chars, timestamps), each series in growing
    size. Flink runs each case in its own JVM, then suse runs on the same events. A Flink
    case at least as large (events and window) as a timed-out one of the same series and
    pattern is not run (unless `run_all`): it would only time out too."""
    import suse

    rows, timed_out = [], []
    for k, (series, workload, peer, window, chars, ts) in enumerate(rows_in):
        if not run_all and any(s == (series, peer.name) and n <= len(chars) and w <= window
                               for s, n, w in timed_out):
            fr = {"status": "skipped", "error": "a smaller case of this series timed out"}
        else:
            path = write_stream(tmp / f"stream{k}.txt", chars, ts)
            case = FlinkCase(f"{k}: {workload} {peer.name} window {window}", peer.flink, flink_within(window), path)
            # One JVM per case: a timed-out Flink task cannot be stopped and would slow later cases.
            fr = run_flink([case], timeout=timeout, progress=True)[0]
            path.unlink()
            if fr["status"] == "timeout":
                timed_out.append(((series, peer.name), len(chars), window))
        row = Row(workload, peer.name, window, len(chars), fr, None, None)
        query = suse_query(peer, window)
        if isinstance(query, str):
            row.suse_note = query
        else:
            timestamps = np.asarray(ts, dtype=np.int64)
            row.suse_seconds, result = best_time(
                lambda: suse.exact(query, chars=chars, timestamps=timestamps), repeat)
            row.suse_count = result.count
        rows.append(row)
    return rows


def floor_seconds(tmp: Path) -> float:
    """Flink's net runtime for a one-event job: the fixed cost inside every Flink time."""
    path = write_stream(tmp / "floor.txt", "A", [0])
    return run_flink([FlinkCase("floor", "A >>B", 2, path)])[0]["seconds"]


def fmt_count(n: int) -> str:
    return f"{n:,}" if n < 10**12 else f"{n:.3e}"  # suse's counts outgrow any column


def report(rows: list[Row]) -> list[str]:
    """Print the table; return the mismatches."""
    mismatches = []
    head = (f"{'workload':<24} {'pattern':<16} {'window':>7} {'events':>8} {'flink count':>14} "
            f"{'suse count':>14} {'flink s':>9} {'suse s':>9} {'flink ev/s':>12} {'suse ev/s':>12} {'ratio':>9}")
    print(head)
    for r in rows:
        fc, fs, fev, ratio = "", "", "", ""
        if r.flink["status"] == "ok":
            fc, fs = fmt_count(r.flink["count"]), f"{r.flink['seconds']:.3f}"
            fev = f"{r.events / r.flink['seconds']:,.0f}"
        elif r.flink["status"] == "timeout":
            fc, fs = "timed out", f">{r.flink['timeout_seconds']:.0f}"
        elif r.flink["status"] == "skipped":
            fc = "not run"
        else:
            fc = "error"
        sc = fmt_count(r.suse_count) if r.suse_count is not None else r.suse_note[:14] or "-"
        ss = f"{r.suse_seconds:.5f}" if r.suse_seconds is not None else ""
        sev = f"{r.events / r.suse_seconds:,.0f}" if r.suse_seconds else ""
        if r.suse_seconds and r.flink["status"] == "ok":
            ratio = f"{r.flink['seconds'] / r.suse_seconds:,.0f}x"
        elif r.suse_seconds and r.flink["status"] == "timeout":
            ratio = f">{r.flink['timeout_seconds'] / r.suse_seconds:,.0f}x"
        print(f"{r.workload:<24} {r.pattern:<16} {r.window:>7} {r.events:>8} {fc:>14} {sc:>14} "
              f"{fs:>9} {ss:>9} {fev:>12} {sev:>12} {ratio:>9}")
        if r.flink["status"] == "error":
            print(f"  flink error: {r.flink['error']}", file=sys.stderr)
            mismatches.append(f"{r.workload} {r.pattern}: flink error {r.flink['error']}")
        if r.flink["status"] == "ok" and r.suse_count is not None and r.flink["count"] != r.suse_count:
            msg = (f"MISMATCH {r.workload} {r.pattern} window={r.window}: "
                   f"flink {r.flink['count']} != suse {r.suse_count}")
            print(msg, file=sys.stderr)
            mismatches.append(msg)
        if r.suse_note and r.suse_count is None and r.pattern in PATTERNS and PATTERNS[r.pattern].suse:
            print(f"  {r.pattern}: suse {r.suse_note}")
    return mismatches


def paper_rows(patterns, events_list, windows, seed):
    from suse.io.synthetic import synthetic_stream

    for n in events_list:
        for name in patterns:
            peer = PATTERNS[name]
            letters = "".join(sorted({c for c in peer.suse if c.isalnum()}))
            stream = synthetic_stream(letters, n, "zipf", 2.0, seed=seed)
            for w in windows:
                yield ("paper", f"zipf2 {letters} seed {seed}", peer, w, stream.chars, stream.timestamps)


def abcd_rows(max_i):
    i = 8
    while i <= max_i:
        chars = "A" * i + "B" * i + "C" * i + "D" * i
        yield ("abcd", f"A^{i}B^{i}C^{i}D^{i}", PATTERNS["ABCD"], 4 * i, chars, np.arange(4 * i))
        i *= 2


def variant_rows(n, window, seed):
    from suse.io.synthetic import synthetic_stream

    stream = synthetic_stream("ABCDE", n, "uniform", seed=seed)
    for peer in PATTERNS.values():
        if peer.feature != "stam":
            yield ("variants", f"uniform ABCDE seed {seed}", peer, window, stream.chars, stream.timestamps)


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
                  f"policy={p.policy:<10} {p.note}")
        return 0
    suites = args.suite.split(",")
    unknown = set(suites) - {"paper", "abcd", "variants"} or set(args.paper_patterns.split(",")) - set(PATTERNS)
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
    import suse

    print(f"FlinkCEP {importlib.metadata.version('apache-flink-libraries')} (local, parallelism 1, event time, "
          f"within = window + 1 ms, cap {args.timeout:.0f} s per case, JVM {' '.join(JVM_OPTIONS)}) "
          f"vs suse {suse.__version__} exact (best of {args.repeat})")
    with tempfile.TemporaryDirectory(prefix="suse-flink-bench-") as tmp:
        print(f"Flink net runtime of a one-event job (fixed cost inside every Flink time): "
              f"{floor_seconds(Path(tmp)):.3f} s")
        mismatches = report(measure(rows_in, Path(tmp), args.timeout, args.repeat, args.run_all))
    print("flink s = Flink's net job runtime (excludes JVM and local cluster start); "
          "ratio = flink s / suse s; not run = a smaller case of the same series timed out")
    if mismatches:
        print(f"{len(mismatches)} MISMATCH(ES):\n  " + "\n  ".join(mismatches), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
