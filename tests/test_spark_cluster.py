"""docs/SPARK.md's "Running on a cluster", as written: a standalone master and two workers (each a
JVM started with pyspark's own ``spark-class`` on 127.0.0.1), suse's wheel built with
``maturin build --release``, a virtual environment with it packed by venv-pack without
pyspark, and ``spark-submit`` in client mode with the two Python variables the doc sets. The
job's output must equal a ``local[2]`` run.

One shortcut, said in the doc too: the environment gets numpy, pandas and pyarrow (and, for the
driver, pyspark) from this test's own virtual environment through a ``.pth`` file, a path
every node of this one-machine cluster has, instead of downloading them into it. suse comes
from the wheel only: the workers' check that they import the driver's suse version runs first.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from helpers import ENV, ROOT  # noqa: E402
from suse.spark import load_config, run_job  # noqa: E402
from test_spark_jobs import SYNTHETIC as JOB  # noqa: E402  (3 streams of 400 events, 12 rows)

pytestmark = pytest.mark.slow

SPARK_HOME = Path(__import__("pyspark").__file__).parent
LOCAL = {"SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}  # every JVM on the loopback


@pytest.fixture(scope="session")
def suse_wheel(tmp_path_factory) -> Path:
    """suse's wheel, built once per test session as the doc says: pip runs maturin's release
    build, with the maturin installed beside the tests (no download)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
                    str(out), str(ROOT)], check=True, capture_output=True, timeout=900)
    (wheel,) = out.glob("suse-*.whl")
    return wheel


def packed_environment(tmp: Path, wheel: Path) -> tuple[Path, Path]:
    """The doc's environment: a venv with suse's wheel, packed by venv-pack without pyspark.
    Returns (the environment, the archive)."""
    env = tmp / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True, timeout=300)
    packed = tmp / "packed.tar.gz"
    subprocess.run([str(Path(sys.executable).parent / "venv-pack"), "-p", str(env), "-o", str(packed), "--quiet",
                    "--exclude", "lib/python*/site-packages/pyspark/*"], check=True, timeout=300)
    # The shortcut: the packages every node has, found after the environment's own. Added after
    # packing, since venv-pack refuses a path in a .pth file (it takes it for an editable install).
    pth = site / "zz-cluster-packages.pth"
    pth.write_text(sysconfig.get_path("purelib") + "\n")
    archive = tmp / "suse-env.tar.gz"
    with tarfile.open(packed) as src, tarfile.open(archive, "w:gz") as dst:
        for member in src:
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        dst.add(pth, arcname=str(pth.relative_to(env)))
    return env, archive


class Standalone:
    """A standalone master and two one-core workers, each a JVM of its own."""

    def __init__(self, tmp: Path):
        self.tmp, self.procs = tmp, []

    def start(self) -> str:
        master_log = self._launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                  "--port", "0", "--webui-port", "0")
        url = self._wait(master_log, r"Starting Spark master at (spark://\S+)")
        for i in (1, 2):
            work = self.tmp / f"worker-{i}"
            work.mkdir()
            self._launch(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                         "--cores", "1", "--memory", "1g", "--webui-port", "0", "--work-dir", str(work), url)
        self._wait(master_log, r"Registering worker", count=2)
        return url

    def _launch(self, name: str, cls: str, *args: str) -> Path:
        log = self.tmp / f"{name}.log"
        env = {**ENV, **LOCAL, "SPARK_DAEMON_MEMORY": "256m"}
        with log.open("w") as out:
            self.procs.append(subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), cls, *args], env=env,
                                               stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        return log

    def _wait(self, log: Path, pattern: str, count: int = 1, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.findall(pattern, log.read_text())
            if len(found) >= count:
                return found[0]
            assert all(p.poll() is None for p in self.procs), log.read_text()[-3000:]
            time.sleep(0.5)
        raise AssertionError(f"no {pattern!r} in {log}:\n{log.read_text()[-3000:]}")

    def stop(self) -> None:
        for proc in self.procs:  # each JVM is its own process group (spark-class execs java)
            if proc.poll() is None:
                os.killpg(proc.pid, 15)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()


def test_spark_submit_to_a_standalone_cluster_as_documented(spark, tmp_path, suse_wheel):
    env, archive = packed_environment(tmp_path, suse_wheel)
    job = tmp_path / "cluster.toml"
    job.write_text(JOB.format(out=tmp_path / "cluster", fmt="parquet") + '[spark.options]\n"spark.sql.shuffle.partitions" = "4"\n')
    cluster = Standalone(tmp_path)
    try:
        master = cluster.start()
        submit_py = subprocess.run([str(env / "bin" / "python"), "-c", "import suse.spark.submit as m; print(m.__file__)"],
                                   check=True, capture_output=True, text=True).stdout.strip()
        assert submit_py.startswith(str(env))  # the driver imports suse from the wheel
        command = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master, "--deploy-mode", "client",
                   "--archives", f"{archive}#environment", "--executor-memory", "512m", submit_py, str(job)]
        workers = {**ENV, **LOCAL, "PYSPARK_PYTHON": "./environment/bin/python"}
        # what the doc said before: without PYSPARK_DRIVER_PYTHON the driver takes the executors' path
        proc = subprocess.run(command, env=workers, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert proc.returncode != 0 and "./environment/bin/python" in proc.stderr, proc.stderr[-3000:]
        proc = subprocess.run(command, env={**workers, "PYSPARK_DRIVER_PYTHON": str(env / "bin" / "python")},
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    finally:
        cluster.stop()
    # the executors ran in the workers' directories, with the archive unpacked as `environment`
    unpacked = list(tmp_path.glob("worker-*/app-*/*/environment/bin/python"))
    assert len(unpacked) == 2, unpacked

    local = tmp_path / "local.toml"
    local.write_text(JOB.format(out=tmp_path / "local", fmt="parquet"))
    run_job(load_config(local))  # the test session: local[2]
    cols = ["stream", "evaluated_at", "count", "sum", "exact_count", "elements"]
    got, want = (spark.read.parquet(str(tmp_path / name)).select(cols).orderBy("stream", "evaluated_at").collect()
                 for name in ("cluster", "local"))
    assert got == want and len(want) == 12
