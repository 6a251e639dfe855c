"""`python -m suse ...` runs the command line, like the `suse` console script."""
from suse.cli import main

main()
