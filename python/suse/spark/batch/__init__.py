"""`aggregate`: a job over a batch DataFrame, and the two layouts that bring each partition's
events to one Python worker."""
