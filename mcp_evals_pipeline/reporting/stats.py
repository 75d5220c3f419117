"""The statistics a comparison prints: is a delta more than noise, and how many trials would tell.

- `sign_test`: the exact two-sided sign test over per-task differences. The task is the unit of pairing (both
  conditions, or both batches, ran it); trial numbers are not pairs (trial 2 of one condition has nothing to do
  with trial 2 of the other). Ties (equal pass rates) carry no sign and are dropped, as the test prescribes.
- `trials_to_detect`: trials per side that a two-sided two-proportion z-test (alpha 0.05, power 0.8) needs to
  detect a change of `delta` from the observed rate, towards 50% (the harder direction: the variance grows there).
- `newcombe`: the interval of a difference of two proportions from their Wilson intervals (Newcombe's hybrid score
  method), so a pass-rate change carries an interval built from the same Wilson bounds the SQL models report
  (dbt_like_sql/macros/wilson.sql: the one formula).

Standard library only (math.comb, statistics.NormalDist): exact and small.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist

ALPHA = 0.05
POWER = 0.80
DETECT = 0.10  # the change a team wants to be able to see: 10 points


@dataclass(frozen=True)
class SignTest:
    positive: int
    negative: int
    ties: int
    p_value: float | None  # None: no untied pair, nothing to test

    def describe(self) -> str:
        counts = f"{self.positive} up, {self.negative} down, {self.ties} tied"
        if self.p_value is None:
            return f"sign test: {counts} (no untied task: nothing to test)"
        return f"sign test over tasks: {counts}, two-sided p = {self.p_value:.3g}"


def sign_test(differences: Iterable[float | None]) -> SignTest:
    """Exact two-sided sign test; None (a side with no valid trial) is no pair at all."""
    values = [d for d in differences if d is not None]
    positive = sum(1 for d in values if d > 0)
    negative = sum(1 for d in values if d < 0)
    n = positive + negative
    if n == 0:
        return SignTest(positive, negative, len(values), None)
    tail = sum(math.comb(n, k) for k in range(min(positive, negative) + 1)) / 2 ** n
    return SignTest(positive, negative, len(values) - n, min(1.0, 2 * tail))


def trials_to_detect(rate: float | None, delta: float = DETECT, alpha: float = ALPHA,
                     power: float = POWER) -> int | None:
    """Trials per side to detect a `delta` change from `rate` (towards 50%); None without a rate."""
    if rate is None or not 0 <= rate <= 1 or delta <= 0:
        return None
    p1 = rate
    p2 = rate + delta if rate < 0.5 else rate - delta
    p2 = min(1.0, max(0.0, p2))
    gap = abs(p2 - p1)
    if gap == 0:
        return None
    z_alpha = NormalDist().inv_cdf(1 - alpha / 2)
    z_beta = NormalDist().inv_cdf(power)
    mean = (p1 + p2) / 2
    root = z_alpha * math.sqrt(2 * mean * (1 - mean)) + z_beta * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return math.ceil(root ** 2 / gap ** 2)


@dataclass(frozen=True)
class Difference:
    delta: float  # b - a
    low: float
    high: float


def newcombe(a: tuple[float, float, float], b: tuple[float, float, float]) -> Difference:
    """b - a with its 95% interval, each side given as (rate, Wilson low, Wilson high)."""
    pa, la, ua = a
    pb, lb, ub = b
    delta = pb - pa
    return Difference(delta, delta - math.sqrt((pb - lb) ** 2 + (ua - pa) ** 2),
                      delta + math.sqrt((ub - pb) ** 2 + (pa - la) ** 2))
