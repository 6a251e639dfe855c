"""Command line entry point (`suse`)."""
from suse.cli.app import app, main

__all__ = ["app", "main"]
