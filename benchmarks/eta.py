"""The start estimate's back-test: how far the estimated start of a pending Workload was from the
actual one, on a generated 30-day history (tests/support/eta_backtest.py: one LocalQueue, a
ClusterQueue quota of 8 GPUs, Poisson arrivals, log-normal run times, strict FIFO; seeded).

For each seed it prints the Workloads estimated, the median absolute error (hours) of the
p50-based start, how often the actual start fell in the p50-p90 range, how often "now" was right,
the median actual wait, and the same for an estimator that ignores the queue position (as if
nothing were ahead), the broken one the test's bound must catch.

    python benchmarks/eta.py [--seeds 7 8 9] [--rate 0.9]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.eta_backtest import generate, replay  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 8, 9])
    parser.add_argument("--rate", type=float, default=0.9, help="Workloads arriving per hour")
    args = parser.parse_args()
    print(f"{'seed':>4} {'estimated':>9} {'median |error| h':>16} {'in range':>8} {'now right':>9} "
          f"{'median wait h':>13}   {'ignoring position: |error| h, in range':>38}")
    for seed in args.seeds:
        jobs = generate(seed, rate_per_hour=args.rate)
        r, broken = replay(jobs), replay(jobs, ignore_position=True)
        print(f"{seed:>4} {r.estimates:>9} {r.median_abs_error_hours:>16.2f} {r.in_range:>8.0%} {r.now_right:>9.0%} "
              f"{r.median_wait_hours:>13.2f}   {broken.median_abs_error_hours:>28.2f}, {broken.in_range:>7.0%}")


if __name__ == "__main__":
    main()
