"""SQL:2016 row pattern recognition (MATCH_RECOGNIZE as Trino implements it): the pattern
syntax, the matcher with the standard's preferment and skip rules, and the per-partition
evaluation of DEFINE and MEASURES (docs/SPARK.md, "Standard MATCH_RECOGNIZE")."""
