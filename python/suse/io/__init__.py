"""Event stream input: the paper's text format, CSV, probabilities and synthetic workloads."""
from suse.io.formats import (
    Events,
    iter_stream,
    read_csv_stream,
    read_probabilities,
    read_stream,
    read_text_stream,
)
from suse.io.synthetic import abcd_blocks, alphabet_probabilities, aseq_queries, synthetic_stream

__all__ = [
    "Events",
    "iter_stream",
    "read_text_stream",
    "read_csv_stream",
    "read_stream",
    "read_probabilities",
    "synthetic_stream",
    "abcd_blocks",
    "aseq_queries",
    "alphabet_probabilities",
]
