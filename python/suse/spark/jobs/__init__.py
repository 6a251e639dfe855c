"""TOML job files: their model and checks, the built-in datasets, and `run_job`."""
