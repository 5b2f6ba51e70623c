"""How money and durations are written wherever the bot writes them (alerts, messages, reports), and
text from outside made safe for Slack's mrkdwn (:func:`plain`)."""

from __future__ import annotations


def usd(amount: float) -> str:
    """``1234.5`` (USD) -> ``"$1,234.50"``."""
    return f"${amount:,.2f}"


def duration(seconds: float) -> str:
    """``93784`` (seconds) -> ``"1d 2h"``, ``5400`` -> ``"1h 30m"``, ``300`` -> ``"5m"``."""
    minutes = int(seconds // 60)
    days, rem = divmod(minutes, 1440)
    hours, mins = divmod(rem, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {mins}m"
    return f"{mins}m"


def gpu_amount(gpus: float, devices: dict[str, int] | None = None) -> str:
    """Physical-GPU equivalents as a person reads them, with the devices behind anything but
    whole GPUs: ``8`` -> ``"8"``; a MIG 1g slice of an H100 -> ``"0.14 (1 × nvidia.com/mig-1g.10gb)"``;
    one replica of a GPU shared 4 ways -> ``"0.25 (1 × nvidia.com/gpu)"``."""
    whole = abs(gpus - round(gpus)) < 1e-6
    shown = f"{round(gpus):g}" if whole else f"{gpus:.2f}"
    devices = devices or {}
    if whole and set(devices) <= {"nvidia.com/gpu"}:
        return shown
    listed = ", ".join(f"{n} × {r}" for r, n in devices.items())
    return f"{shown} ({listed})" if listed else shown
def plain(text: object) -> str:
    """``text`` made safe to put into Slack's mrkdwn as it is: ``&``, ``<`` and ``>`` escaped, so
    a name or a message from outside the bot (a pod name, a GPU model string from the exporter,
    an error from an API, a word typed by a user) can neither mention (``<!channel>``), link, nor
    lose a ``<placeholder>``. The one place such text is escaped; apply it to every value a
    template interpolates that the bot did not write itself."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
