"""Reports: the batch scorecard and the weekly synthesis, their jobs and schedules."""
