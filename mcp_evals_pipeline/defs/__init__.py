"""The Dagster layer, loaded by Dagster's own loader (`dg.load_from_defs_folder`, pyproject's [tool.dg]): one folder
per domain (tasks, trials, models, reports), each with its assets, checks, jobs and schedules; the resources in
resources.py; partitions.py is shared. Every Dagster object defined at module level here is part of the project.
Reusable code (grader, agents, sandbox, store, reports) lives outside this package."""
