"""Import every command module so that its @app.command registrations run."""
import importlib

for _name in ("query_cmds", "run_cmd", "experiment_cmd", "serve_cmd", "sql_cmd", "matches_cmd"):
    try:
        importlib.import_module(f"suse.cli.{_name}")
    except ModuleNotFoundError as exc:  # a command whose module is not written yet
        if exc.name != f"suse.cli.{_name}":
            raise
