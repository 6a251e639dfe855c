#!/usr/bin/env bash
# The wheel as a user installs it: build the abi3 wheel, install it with the `spark` extra in a
# fresh virtual environment outside the checkout (no editable install, which would hide missing
# package data), and run tests/wheel_smoke.py there, from a directory outside the checkout.
# Usage: tests/wheel_smoke.sh [PYTHON]   (PYTHON: the checkout's .venv, which has maturin and mypy)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${1:-$root/.venv/bin/python}"
case "$python" in /*) ;; *) python="$PWD/$python" ;; esac  # the checks run elsewhere
work="$(mktemp -d "${TMPDIR:-/tmp}/suse-wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT
start=$SECONDS

# The release build that pyproject's [tool.maturin] describes, into its own folder (cargo's
# target directory is shared with `make install`, so an unchanged core links in seconds).
(cd "$root" && "$python" -m maturin build --release --quiet --out "$work/dist") >"$work/build.log" 2>&1 \
    || { cat "$work/build.log" >&2; exit 1; }
wheel="$(ls "$work"/dist/suse-*.whl)"
case "$wheel" in
    *-abi3-*) ;;
    *) echo "wheel_smoke: $wheel is not an abi3 wheel" >&2; exit 1 ;;
esac
built=$SECONDS
echo "wheel_smoke: built $(basename "$wheel") in $((built - start)) s"

# pip's cache makes the dependencies a local copy after `make install` downloaded them;
# --no-compile: no bytecode for pyspark's thousands of modules, most of which never run here.
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile "$wheel[spark]"
installed=$SECONDS
echo "wheel_smoke: installed with the spark extra in $((installed - built)) s"

cd "$work"  # nothing of the checkout on sys.path
PATH="$work/venv/bin:$PATH" "$work/venv/bin/python" "$root/tests/wheel_smoke.py" "$python"
echo "wheel_smoke: passed (checks $((SECONDS - installed)) s, $((SECONDS - start)) s in all)"
