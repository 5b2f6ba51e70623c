"""What went wrong, said for a person: one or two lines naming the problem and what to do, and
whether it was the input (usage, configuration) or a service that could not be reached.

The CLI turns an :class:`Explained` into its message on stderr and its exit code; the chat layer
into an ephemeral answer. Tracebacks are for the log (and ``--verbose``), never for the reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.settings import ConfigError

if TYPE_CHECKING:
    import sqlalchemy.exc

USAGE = 2
"""Exit code: the input (arguments, configuration, a file given) is wrong."""
UNAVAILABLE = 1
"""Exit code: a service (Prometheus, the Kubernetes API, the database, AWS) could not be used."""


@dataclass(frozen=True)
class Explained:
    """``message``: what is wrong and what to do, one or two lines; ``exit_code``: :data:`USAGE`
    or :data:`UNAVAILABLE`; ``expected``: False for an error the bot did not foresee (a bug:
    its traceback belongs in the log)."""

    message: str
    exit_code: int
    expected: bool = True


def _database(e: sqlalchemy.exc.SQLAlchemyError) -> Explained:
    import sqlalchemy.exc

    from bot.chat.outcomes import database_error_line

    first = database_error_line(e, limit=None)
    if isinstance(e, (sqlalchemy.exc.ArgumentError, sqlalchemy.exc.NoSuchModuleError)):
        return Explained(f"the database URL cannot be used: {first}; write postgresql+psycopg2://... or sqlite:///...", USAGE)
    if isinstance(e, sqlalchemy.exc.OperationalError):
        return Explained(
            f"the database could not be used: {first}; check database_url (host, credentials, database name)",
            UNAVAILABLE,
        )
    return Explained(f"the database failed: {first}", UNAVAILABLE)


def explain(error: BaseException) -> Explained:
    """The person-facing account of ``error``. Errors the bot knows get their own words and exit
    code; anything else is named as unexpected (exit :data:`UNAVAILABLE`), so a bug still reads
    as one sentence, with the traceback left to the log."""
    # Imported here, once something failed: every command imports this module, and the sources'
    # modules bring the kubernetes client and SQLAlchemy, seconds of start-up `check` never needs.
    import sqlalchemy.exc

    from actions.cost.periods import PeriodError
    from actions.estimate.request import EstimateInputError
    from actions.sources.aws.price_list import PriceFetchError
    from actions.sources.kube.dump import KubectlDumpError
    from actions.sources.kube.reader import ClusterConfigError, ClusterReadError
    from actions.sources.prometheus.api import TelemetryError
    from actions.sources.recording import RecordingError

    if isinstance(error, ConfigError):
        return Explained(f"configuration error:\n{error}", USAGE)
    if isinstance(error, (KubectlDumpError, RecordingError, EstimateInputError, PeriodError)):
        return Explained(str(error), USAGE)
    if isinstance(error, ClusterConfigError):
        return Explained(str(error), USAGE)
    if isinstance(error, (TelemetryError, ClusterReadError, PriceFetchError)):
        return Explained(str(error), UNAVAILABLE)
    if isinstance(error, sqlalchemy.exc.SQLAlchemyError):
        return _database(error)
    return Explained(
        f"unexpected {type(error).__name__}: {error}; the details are in the log (or rerun with --verbose)",
        UNAVAILABLE,
        expected=False,
    )
