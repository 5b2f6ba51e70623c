"""How money and durations are written wherever the bot writes them (alerts, messages, reports),
text from outside made safe for Slack's mrkdwn (:func:`plain`), and URLs shown without the
credentials they may carry (:func:`shown_url`)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from actions.model.times import HOURS_PER_MONTH, HOURS_PER_YEAR


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


def describe_hours(hours: float) -> str:
    """A duration in hours as the answer shows it: ``168`` -> ``"168 h (1 week)"``, ``730`` ->
    ``"730 h (1 month)"``, ``1.5`` -> ``"1.5 h (90 min)"``, ``36`` -> ``"36 h"``."""
    text = f"{format_number(hours)} h"
    for size, unit in ((HOURS_PER_YEAR, "year"), (HOURS_PER_MONTH, "month"), (168.0, "week"), (24.0, "day")):
        n = hours / size
        if hours >= size and abs(n - round(n)) < 1e-9:
            return f"{text} ({plural(round(n), unit)})"
    minutes = hours * 60
    if not float(hours).is_integer() and hours < 24 and abs(minutes - round(minutes)) < 1e-6:
        return f"{text} ({round(minutes)} min)"
    return text


def format_hours(hours: float) -> str:
    """A duration in hours in the request syntax: ``168`` -> ``"1w"``, ``72`` -> ``"3d"``,
    ``36`` -> ``"36h"``, ``0.5`` -> ``"30m"``."""
    for unit, size in (("w", 168.0), ("d", 24.0), ("h", 1.0)):
        if hours >= size and (hours / size).is_integer():
            return f"{int(hours / size)}{unit}"
    if (hours * 60).is_integer():
        return f"{int(hours * 60)}m"
    return f"{hours:g}h"


def format_number(x: float) -> str:
    """A quantity (hours, GPU-hours, a count) as the answer shows it, to 2 decimals at most:
    ``2688.0`` -> ``"2,688"``, ``4.5`` -> ``"4.5"``, ``0.1667`` -> ``"0.17"``."""
    text = f"{x:,.2f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def plural(n: float, word: str) -> str:
    return f"{format_number(n)} {word}{'' if n == 1 else 's'}"


def usd_rate(rate: float) -> str:
    """A rate in USD as the answer shows it, to 4 decimals at most and 2 at least: ``6.88`` ->
    ``"$6.88"``, ``2.7447`` -> ``"$2.7447"``, ``3`` -> ``"$3.00"``."""
    text = f"{rate:,.4f}".rstrip("0")
    if len(text.split(".")[1]) < 2:
        text = f"{rate:,.2f}"
    return f"${text}"


def one_line(e: BaseException) -> str:
    """An error in one line (``"ClusterReadError: connection refused"``), for warnings, logs and
    the digest."""
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def shown_url(url: str) -> str:
    """``url`` as it may be shown in a message, a log line or ``check``'s output: any user and
    password replaced by ``REDACTED`` (``http://bot:s3cret@prom:9090`` -> ``http://REDACTED@prom:9090``);
    other URLs as they are."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="REDACTED@" + parts.netloc.rsplit("@", 1)[1]))


def kwh(amount: float) -> str:
    """``"1,240 kWh"``, ``"3.2 kWh"``, ``"0.41 kWh"``: energy with the digits it deserves."""
    return f"{amount:,.0f} kWh" if amount >= 100 else f"{amount:,.1f} kWh" if amount >= 1 else f"{amount:.2f} kWh"


def co2e(kg: float) -> str:
    """``"480 kg CO2e"``, ``"1.2 kg CO2e"``, ``"12.5 t CO2e"`` (from 10,000 kg)."""
    if kg >= 10_000:
        return f"{kg / 1000:,.1f} t CO2e"
    return f"{kg:,.0f} kg CO2e" if kg >= 100 else f"{kg:,.1f} kg CO2e"


def energy_amount(kwh_amount: float, co2e_kg: float | None) -> str:
    """``"1,240 kWh (480 kg CO2e)"``; the kWh alone when the carbon is not known."""
    return kwh(kwh_amount) + (f" ({co2e(co2e_kg)})" if co2e_kg is not None else "")
