# Entry points for a fresh machine: `make demo` runs the main job, `make dashboard` opens its live
# page, `make test` runs the tests. All create .venv in the checkout and build the native core
# with maturin through pip; `make test` also installs Debian's chromium for the browser tests.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.suse-installed
FLINK  := $(VENV)/.suse-flink-installed
NATIVE := $(shell find core -name "*.rs" -not -path "*/target/*") $(wildcard core/*/Cargo.toml) core/Cargo.toml pyproject.toml

.PHONY: install demo dashboard browser lint wheel-smoke test bench native clean

install: $(STAMP)

# A native module of an older, non-abi3 build would shadow the new one: Python prefers it.
$(STAMP): $(NATIVE)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	rm -f python/suse/_core.cpython-*.so
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# The `flink` extra (FlinkCEP jars, a ~330 MB wheel): the tests need it, the demo does not.
# Installed from pyproject's list without reinstalling (and so rebuilding) suse itself.
$(FLINK): $(STAMP)
	$(PY) -c "import sys; toml = __import__('tomllib' if sys.version_info >= (3, 11) else 'tomli'); print('\\n'.join(toml.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['flink']))" \
		| $(PY) -m pip install --quiet -r /dev/stdin
	touch $(FLINK)

# Rebuild only the Rust extension in place (after editing core/kernel/src or core/python/src).
native:
	rm -f python/suse/_core.cpython-*.so
	$(PY) -m pip install --quiet -e . --no-deps
	touch $(STAMP)

demo: install
	$(VENV)/bin/suse run examples/flights.toml

# The live page of the flights job on http://127.0.0.1:8050/ (Ctrl-C stops; the next start resumes).
dashboard: install
	$(VENV)/bin/suse serve --replay flights --speed 1day/s

# Debian's chromium for the browser tests, installed only when missing (CI runs as root).
browser:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "the browser tests need Debian's chromium: sudo apt-get install chromium" >&2; exit 1; fi; }

# ruff, mypy over python/suse (settings in pyproject.toml), and the native module's stub
# (python/suse/_core.pyi) against the built module: names, parameters and defaults.
lint: install
	$(VENV)/bin/ruff check python tests bench
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest suse._core --mypy-config-file pyproject.toml

# The abi3 wheel installed with the `spark` extra in a fresh environment outside the checkout:
# the CLI, a Spark job on local[1], package data, py.typed and the stub (tests/wheel_smoke.sh).
wheel-smoke: install
	bash tests/wheel_smoke.sh $(PY)

# The kernel's Rust tests (unit and property tests, no Python needed), lint and types, pytest,
# then the wheel as users install it.
test: install browser $(FLINK)
	cargo test --quiet --manifest-path core/Cargo.toml -p suse-kernel
	$(MAKE) --no-print-directory lint
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory wheel-smoke

bench: install
	$(PY) bench/exact_abcd.py
	$(PY) bench/summary_synthetic.py

clean:
	rm -rf $(VENV) core/target
