"""Reproduce the paper's evaluation: metrics (`metrics`) and experiment runners (`experiments`)."""
