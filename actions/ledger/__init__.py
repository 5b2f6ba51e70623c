"""The usage ledger: each finished hour's usage kept as rows in the bot's database, so reports
read hours instead of weeks of raw series. :mod:`.rows` (an hour's usage as rows, rows back into
a period's usage), :mod:`.plan` (which hours a period needs, and from where) and :mod:`.rollup`
(rolling hours up from a usage source, and the ledger as a usage source). Its table is
:mod:`actions.store.ledger`. Pure: the database and Prometheus come through :mod:`actions.ports`."""
