"""The engines over each partition's events, inside the Python workers: one plan per query
(`sorted.Plan`) or per query set (`multi.MultiPlan`), run over sorted rows (`sorted.run_sorted`)
or over each partition's gathered lists (`gathered.run_gathered`)."""
