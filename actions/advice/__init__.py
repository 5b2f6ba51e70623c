"""Advice that saves money on GPUs used badly, not only idle ones. :mod:`.usage` (from the
cluster and its history to what advice judges), :mod:`.recommend` (fewer GPUs, a MIG profile, a
smaller GPU, spot), :mod:`.targets` (where a consumer's pods can land and what those nodes offer),
:mod:`.smaller_gpu`, :mod:`.commitments` (commit to the steady baseline),
:mod:`.model` (what advice says), :mod:`.request` (right-sizing as a request an approver can
apply), :mod:`.recheck` (whether it still holds right before it is applied) and :mod:`.round`
(one round of advice, over one cluster or several, and the re-check's read). Pure: history comes
through :class:`actions.ports.HistorySource`."""
