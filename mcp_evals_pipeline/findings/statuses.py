"""A finding's weekly statuses (decided by findings/status.py). Apart so the CLI names them without loading more."""

from typing import Literal

# new: created this week; recurring: its signature seen again; apparently-resolved: its tasks ran in
# status.RESOLVED_AFTER_BATCHES batches since its last sighting without it; quiet: not seen, but its tasks have run
# in fewer clean batches than that yet; not-observed: none of its tasks ran this week.
Status = Literal["new", "recurring", "apparently-resolved", "quiet", "not-observed"]
STATUSES: tuple[str, ...] = ("new", "recurring", "apparently-resolved", "quiet", "not-observed")
