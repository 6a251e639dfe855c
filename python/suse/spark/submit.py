"""Entry point for spark-submit, which needs a Python file rather than a command:

    spark-submit [spark options] "$(python -c 'import suse.spark.submit as m; print(m.__file__)')" JOB.toml

The job's Spark settings come from spark-submit; leave ``spark.master`` out of the job file.
"""
import sys

from suse.cli import main

if __name__ == "__main__":
    main(["run", *sys.argv[1:]])
