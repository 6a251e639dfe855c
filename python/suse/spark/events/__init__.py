"""Rows -> events: characters from predicates, the time axis, tie breakers, and the checks on
letters no row can get. Everything here runs on the driver as Spark expressions."""
