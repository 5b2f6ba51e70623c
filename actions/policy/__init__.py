"""The rules the decisions apply: :mod:`.rules` (thresholds, modes, ``act_on``, idle power
ceilings), :mod:`.teams` (teams, their namespaces and approvers), :mod:`.namespaces` (the policy
in force in a namespace: global, then the team's, then the namespace's annotations) and
:mod:`.advice` (how advice is judged, committed rates). Pydantic models the config validates
into; no I/O."""
