"""Which policy holds in a namespace: the global ``policy``, overridden by its team's
``teams[].policy``, overridden by the namespace's own annotations. Pure.

A namespace overrides a policy key with an annotation ``gpu-cost-bot/<key>``, the key written
with dashes (``gpu-cost-bot/window-seconds: "7200"``, ``gpu-cost-bot/mode: report``,
``gpu-cost-bot/act-on: "Notebook,RayCluster"``). An annotation whose value does not validate is
ignored, with a warning naming the namespace and the reason, so one typo never stops a sweep.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import ValidationError

from actions.model.findings import Handling
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory

ANNOTATION_PREFIX = "gpu-cost-bot/"
# The keys a namespace may override; thresholds of GPU families and the opt-out annotation's
# own name stay with the platform's config.
NAMESPACE_KEYS = (
    "window_seconds",
    "warmup_seconds",
    "engine_idle_pct",
    "min_coverage",
    "request_ttl_seconds",
    "snooze_seconds",
    "exempt_seconds",
    "deny_cooldown_seconds",
    "mode",
    "grace_seconds",
    "act_on",
)


def annotation_key(policy_key: str) -> str:
    """``"gpu-cost-bot/window-seconds"`` for ``"window_seconds"``."""
    return ANNOTATION_PREFIX + policy_key.replace("_", "-")


def _errors(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'policy'}: {err['msg']}" for err in e.errors())


def merged(base: Policy, overrides: Mapping[str, Any]) -> Policy:
    """``base`` with ``overrides`` (policy keys) on top; ``idle_power_watts`` is merged per GPU
    family rather than replaced. Raises pydantic.ValidationError when the result is invalid."""
    data = base.model_dump()
    for key, value in overrides.items():
        if key == "idle_power_watts":
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return Policy.model_validate(data)


def namespace_overrides(annotations: Mapping[str, str]) -> dict[str, Any]:
    """The policy keys a namespace's ``annotations`` set (values as written: strings, and
    ``act_on`` split at commas)."""
    out: dict[str, Any] = {}
    for key in NAMESPACE_KEYS:
        value = annotations.get(annotation_key(key))
        if value is None:
            continue
        out[key] = [k.strip() for k in value.split(",") if k.strip()] if key == "act_on" else value.strip()
    return out


class PolicyBook:
    """The policy in force in each namespace, and where it came from.

    ``base`` is the global policy; ``teams`` supplies each namespace's team and its overrides;
    ``namespace_annotations`` maps namespace -> annotations (from the snapshot). Policies are built
    once per namespace. :attr:`warnings` lists the overrides that were ignored.
    """

    def __init__(
        self,
        base: Policy,
        teams: TeamDirectory | None = None,
        namespace_annotations: Mapping[str, Mapping[str, str]] | None = None,
    ):
        self.base = base
        self.teams = teams or TeamDirectory([])
        self.namespace_annotations = namespace_annotations or {}
        self.warnings: list[str] = []
        self._by_team: dict[str, tuple[Policy, str]] = {}
        self._by_namespace: dict[str, tuple[Policy, str]] = {}

    @classmethod
    def uniform(cls, policy: Policy) -> "PolicyBook":
        """One policy everywhere (no teams, no annotations)."""
        return cls(policy)

    def _team_policy(self, team_name: str) -> tuple[Policy, str]:
        if team_name not in self._by_team:
            team = self.teams.teams.get(team_name)
            if team is None or not team.policy:
                self._by_team[team_name] = (self.base, "global")
            else:
                try:
                    self._by_team[team_name] = (merged(self.base, team.policy), f"team {team_name}")
                except ValidationError as e:
                    # Settings check this at start; a policy that still fails keeps the global one.
                    self.warnings.append(f"team {team_name}: policy ignored: {_errors(e)}")
                    self._by_team[team_name] = (self.base, "global")
        return self._by_team[team_name]

    def resolve(self, namespace: str) -> tuple[Policy, str]:
        """The policy in force in ``namespace`` and its source (``"global"``, ``"team research"``,
        ``"namespace ml annotations"``)."""
        if namespace not in self._by_namespace:
            team_policy, source = self._team_policy(self.teams.team_for(namespace).name)
            overrides = namespace_overrides(self.namespace_annotations.get(namespace, {}))
            result = (team_policy, source)
            if overrides:
                try:
                    result = (merged(team_policy, overrides), f"namespace {namespace} annotations")
                except ValidationError as e:
                    self.warnings.append(
                        f"namespace {namespace}: gpu-cost-bot/ policy annotations ignored: {_errors(e)}"
                    )
            self._by_namespace[namespace] = result
        return self._by_namespace[namespace]

    def for_namespace(self, namespace: str) -> Policy:
        """The policy in force in ``namespace``."""
        return self.resolve(namespace)[0]

    def handling(self, namespace: str) -> Handling:
        """How findings in ``namespace`` are handled (mode, grace and the request's durations)."""
        p, source = self.resolve(namespace)
        return Handling(
            mode=p.mode,
            grace_seconds=p.grace_seconds,
            request_ttl_seconds=p.request_ttl_seconds,
            snooze_seconds=p.snooze_seconds,
            exempt_seconds=p.exempt_seconds,
            deny_cooldown_seconds=p.deny_cooldown_seconds,
            source=source,
        )

    def telemetry_policies(self, namespaces: list[str] | set[str]) -> dict[tuple, Policy]:
        """One policy per distinct telemetry query the ``namespaces`` need (by
        :meth:`Policy.telemetry_key`), the base policy's always included."""
        out = {self.base.telemetry_key(): self.base}
        for ns in sorted(namespaces):
            p = self.for_namespace(ns)
            out.setdefault(p.telemetry_key(), p)
        return out
