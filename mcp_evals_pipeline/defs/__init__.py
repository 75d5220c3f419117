"""The Dagster layer: partitions, assets, checks, schedules and resources, each in its own module.
Reusable code (grader, agents, sandbox, store, reports) lives outside this package."""
