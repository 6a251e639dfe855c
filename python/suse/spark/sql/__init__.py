"""SQL fronts: the MATCH_RECOGNIZE-style statement (`suse.spark.sql`) and the table function."""
