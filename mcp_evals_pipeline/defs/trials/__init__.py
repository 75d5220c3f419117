"""Trials: the partitioned trial asset, its check, its job, and the schedules that launch batches."""
