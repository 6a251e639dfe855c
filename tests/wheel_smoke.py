"""Checks of an installed wheel, run by tests/wheel_smoke.sh in a fresh virtual environment
from a directory outside the checkout (so not collected by pytest: no `test_` prefix).

Usage: python wheel_smoke.py CHECKOUT_PYTHON   (a Python with mypy, for the typing check)
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

import suse

CHECKOUT = Path(__file__).resolve().parents[1]
SOURCE = CHECKOUT / "python" / "suse"


def check(ok: bool, what: str) -> None:
    if not ok:
        sys.exit(f"wheel_smoke: FAILED: {what}")


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=600)


def installed_from_the_wheel() -> Path:
    package = Path(suse.__file__).resolve().parent
    check(CHECKOUT not in package.parents, f"suse imported from the checkout: {package}")
    check(Path(sys.prefix) in package.parents, f"suse is not installed in {sys.prefix}: {package}")
    return package


def package_files_shipped(package: Path) -> None:
    """Every file of the source package (data, stub, py.typed) is in the installed one."""
    tracked = run("git", "-C", str(CHECKOUT), "ls-files", "python/suse").stdout.split()
    check(bool(tracked), "git lists no source files")
    wanted = {str(Path(f).relative_to("python/suse")) for f in tracked}
    missing = sorted(f for f in wanted if not (package / f).is_file())
    check(not missing, f"files missing from the wheel: {missing}")
    for name in ("py.typed", "_core.pyi", "dashboard/static/index.html", "dashboard/static/app.js",
                 "dashboard/static/style.css"):
        check(name in wanted, f"{name} is not in the source package")
    # The live page reads its files as the server does.
    page = resources.files("suse.dashboard").joinpath("static").joinpath("index.html").read_text()
    check("<html" in page.lower(), "the live page's index.html is not a page")


def typed(checkout_python: str) -> None:
    """mypy, given the installed package only, reads its types (py.typed) and the stub: one
    file that uses them right passes, one that does not gets exactly the stub's error."""
    with tempfile.TemporaryDirectory() as tmp:
        good, bad = Path(tmp, "good.py"), Path(tmp, "bad.py")
        good.write_text("import suse\nfrom suse import _core\n"
                        "q = suse.Query('AB', window=10)\n"
                        "n: int = _core.summary_memory(q._dfa, 10)\n"
                        "engines: list[str] = _core.STRATEGIES\n")
        bad.write_text("from suse import _core\nn: str = _core.summary_memory(_core.Dfa(1, 'A', '', 0, [True], [0]), 10)\n")
        got = run(checkout_python, "-m", "mypy", "--python-executable", sys.executable, "--no-incremental",
                  "--config-file", "/dev/null", str(good), str(bad))
        errors = [line for line in got.stdout.splitlines() if ": error:" in line]
        check(len(errors) == 1 and errors[0].startswith(f"{bad}:2:") and 'type "int", variable has type "str"' in errors[0],
              f"mypy on the installed package: {got.stdout}{got.stderr}")


def command_line() -> None:
    stream = "A 1 B 2 A 3 D 4 B 5 C 6 D 7"
    got = run("suse", "exact", "A(B*C)*D", "--window", "1000", "--json", stdin=stream)
    check(got.returncode == 0, f"suse exact: {got.stderr}")
    events = [(c, int(t)) for c, t in zip(stream.split()[::2], stream.split()[1::2])]
    truth = suse.exact(suse.Query("A(B*C)*D", window=1000), events).count
    check(truth > 0 and json.loads(got.stdout)["count"] == truth, f"suse exact says {got.stdout}, the API {truth}")
    bad = run("suse", "exact", "A(B", "--window", "10", stdin=stream)
    check(bad.returncode == 2 and bad.stderr.startswith("query error:") and "Traceback" not in bad.stderr,
          f"a bad query: {bad.stderr}")


def spark_job(out: Path) -> None:
    """The bundled synthetic job (a data file of the wheel) on local[1]."""
    import pyarrow.parquet as pq

    job = resources.files("suse.dashboard").joinpath("jobs").joinpath("synthetic.toml")
    with resources.as_file(job) as path:
        got = run("suse", "run", str(path), "--master", "local[1]", "--output", str(out))
    check(got.returncode == 0, f"suse run: {got.stdout}{got.stderr}")
    rows = pq.read_table(out).to_pylist()
    check({r["stream"] for r in rows} == {0, 1}, f"rows of both streams: {len(rows)} rows")
    check(all(int(r["count"]) <= int(r["exact_count"]) for r in rows), "a summary counted more than the truth")
    check(any(int(r["exact_count"]) > 0 for r in rows), "no matches at all")


def main() -> None:
    package = installed_from_the_wheel()
    package_files_shipped(package)
    typed(sys.argv[1])
    command_line()
    with tempfile.TemporaryDirectory() as tmp:
        spark_job(Path(tmp, "out"))


if __name__ == "__main__":
    main()
