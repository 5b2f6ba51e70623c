"""The ``budgets:`` section: budgets in GPU-hours or USD per month, week or N days, for a team, a
Kueue LocalQueue or a ClusterQueue, and what to do at 100% (see :class:`actions.budgets.model.Budget`).

```yaml
budgets:
  - localqueue: training/training-queue   # namespace/name
    gpu_hours: 2000
    per: month                            # month | week | 14d (with from: 2026-11-02)
    on_exhausted: ask                     # warn (default) | ask | auto
  - clusterqueue: cq-h100
    usd: 50000
    per: week
    on_exhausted: auto
    grace_seconds: 7200
  - team: research
    usd: 20000
```
"""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field, model_validator

from actions.budgets.model import CLUSTERQUEUE, GPU_HOURS, HOLD, LOCALQUEUE, TEAM, USD, Budget
from actions.model.durations import Seconds

EXAMPLE = "budgets: [{localqueue: training/training-queue, gpu_hours: 2000, per: month, on_exhausted: ask}]"


class BudgetSettings(BaseModel):
    """One budget: exactly one of ``team``, ``localqueue`` (``namespace/name``) and
    ``clusterqueue``; exactly one of ``usd`` and ``gpu_hours`` (per ``per``: ``month``, ``week``
    or ``Nd`` from ``from``); ``on_exhausted`` ``warn``/``ask``/``auto``; ``stop_policy``
    ``Hold`` (default) or ``HoldAndDrain``; ``grace_seconds`` before an ``auto`` hold;
    ``cluster`` the cluster of ``clusters:`` it is kept in."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    team: str | None = None
    localqueue: str | None = None
    clusterqueue: str | None = None
    usd: float | None = Field(None, gt=0)
    gpu_hours: float | None = Field(None, gt=0)
    per: str = "month"
    from_: date | None = Field(None, alias="from")
    on_exhausted: str = "warn"
    stop_policy: str = HOLD
    grace_seconds: Seconds = Field(4 * 3600, ge=0)
    cluster: str = ""

    @model_validator(mode="after")
    def _one_of_each(self) -> "BudgetSettings":
        scopes = [s for s in (TEAM, LOCALQUEUE, CLUSTERQUEUE) if getattr(self, s)]
        if len(scopes) != 1:
            raise ValueError(f"name one of team, localqueue or clusterqueue, got {scopes or 'none'}; e.g. {EXAMPLE}")
        if (self.usd is None) == (self.gpu_hours is None):
            raise ValueError(f"give the budget in usd or in gpu_hours, one of them; e.g. {EXAMPLE}")
        self.budget()  # the model's own checks, with their messages
        return self

    def budget(self) -> Budget:
        """This budget as the decisions take it. Raises ValueError as :class:`Budget` does."""
        scope = next(s for s in (TEAM, LOCALQUEUE, CLUSTERQUEUE) if getattr(self, s))
        unit, amount = (USD, self.usd) if self.usd is not None else (GPU_HOURS, self.gpu_hours)
        return Budget(scope, getattr(self, scope), float(amount or 0), unit, self.per, self.from_, self.on_exhausted,
                      self.stop_policy, float(self.grace_seconds), self.cluster)
