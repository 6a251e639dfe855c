"""`aggregate_stream`: each partition's summary in Spark state across micro-batches, and the
event-time grid of due evaluations."""
