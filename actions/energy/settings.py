"""The ``energy:`` section of the config (top level, and per cluster under ``clusters:``): the
facility's PUE, the grid's carbon intensity (configured, or the bundled figure of a ``region``) and
the electricity price for on-prem chargeback, with where each figure comes from. Pydantic models
the settings validate into, and :class:`EnergyFactors`, the resolved figures the cost engine
multiplies GPU kWh by. No I/O.

    energy:
      pue: 1.3
      pue_source: "facilities report 2025"
      region: aws:us-east-1            # or SRVC, DE, Germany, europe-west4, westeurope
      usd_per_kwh: 0.11
      usd_per_kwh_as_of: "2026-01"
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from actions.energy.grids import UnknownGrid, grid_intensity

EXAMPLE = (
    "energy:\n"
    "  pue: 1.3\n"
    "  region: aws:us-east-1          # or carbon_intensity_gco2e_per_kwh: 350 with carbon_intensity_source\n"
    "  usd_per_kwh: 0.11"
)
DEFAULT_PUE_SOURCE = "default 1.0: facility overhead not counted"
# Fields that describe one figure travel together when a cluster's section overrides the top level:
# a cluster that names its own region or intensity takes none of the top-level intensity fields.
_GROUPS = (
    ("pue", "pue_source"),
    ("carbon_intensity_gco2e_per_kwh", "carbon_intensity_source", "carbon_intensity_as_of", "region"),
    ("usd_per_kwh", "usd_per_kwh_as_of"),
)


class EnergySettings(BaseModel):
    """How GPU energy becomes facility energy, carbon and money.

    ``pue``: the facility's power usage effectiveness, facility energy / IT energy (1.0 to 3.0;
    1.0, the default, counts the GPUs' energy alone). ``carbon_intensity_gco2e_per_kwh``: the grid's
    carbon intensity in g CO2e per kWh (0 to 2000), with ``carbon_intensity_source`` and
    ``carbon_intensity_as_of`` saying where and when it was read; it wins over ``region``, which
    names the grid for the bundled figure (an eGRID subregion such as ``SRVC``, a country such as
    ``DE``, or a cloud region such as ``aws:us-east-1``; a name the table does not know fails at
    start-up with the closest ones). ``usd_per_kwh``: the electricity price in USD per kWh for
    on-prem chargeback (above 0, below 5), as of ``usd_per_kwh_as_of``.
    """

    model_config = ConfigDict(extra="forbid")

    pue: float = Field(1.0, ge=1.0, le=3.0, description="facility energy / IT energy")
    pue_source: str | None = Field(None, min_length=1)
    carbon_intensity_gco2e_per_kwh: float | None = Field(None, ge=0, le=2000, description="g CO2e per kWh")
    carbon_intensity_source: str | None = Field(None, min_length=1)
    carbon_intensity_as_of: str | None = Field(None, min_length=1)
    region: str | None = Field(None, description="the grid or cloud region whose bundled intensity applies")
    usd_per_kwh: float | None = Field(None, gt=0, lt=5, description="electricity price, USD per kWh")
    usd_per_kwh_as_of: str | None = Field(None, min_length=1)

    @field_validator("pue", mode="before")
    @classmethod
    def _pue_explained(cls, v: object) -> object:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 1.0:
            raise ValueError(
                f"pue {v:g} is below 1.0: PUE is facility energy / IT energy, so at least 1.0 (1.0 counts the "
                f"GPUs alone; a typical data centre is 1.1 to 1.6); e.g.\n{EXAMPLE}"
            )
        return v

    @field_validator("region", mode="before")
    @classmethod
    def _region_text(cls, v: object) -> object:
        if isinstance(v, bool):
            # YAML 1.1 reads a bare NO (Norway) or ON as a boolean.
            raise ValueError('region is a YAML boolean; quote a country code, e.g. region: "NO"')
        return v

    @field_validator("region")
    @classmethod
    def _known_region(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                grid_intensity(v)
            except UnknownGrid as e:
                raise ValueError(f"{e}\n{EXAMPLE}") from None
        return v

    @model_validator(mode="after")
    def _sources_with_their_figures(self) -> "EnergySettings":
        for figure, notes in (
            ("carbon_intensity_gco2e_per_kwh", ("carbon_intensity_source", "carbon_intensity_as_of")),
            ("usd_per_kwh", ("usd_per_kwh_as_of",)),
        ):
            given = [n for n in notes if getattr(self, n) is not None]
            if given and getattr(self, figure) is None:
                raise ValueError(f"{', '.join(given)} given without {figure}; give the figure too, e.g.\n{EXAMPLE}")
        return self

    def factors(self) -> "EnergyFactors":
        """The figures this section resolves to, each with its source (see :class:`EnergyFactors`).
        The bundled intensity of ``region`` is read here (validated already, so no error)."""
        if "pue" in self.model_fields_set:
            pue_source = f"configured: {self.pue_source}" if self.pue_source else "configured"
        else:
            pue_source = DEFAULT_PUE_SOURCE
        gco2e: float | None = None
        if self.carbon_intensity_gco2e_per_kwh is not None:
            gco2e = self.carbon_intensity_gco2e_per_kwh
            what = f"configured: {self.carbon_intensity_source}" if self.carbon_intensity_source else "configured"
            intensity_source = f"{what} (as of {self.carbon_intensity_as_of})" if self.carbon_intensity_as_of else what
        elif self.region is not None:
            grid = grid_intensity(self.region)
            gco2e = grid.gco2e_per_kwh
            via = "" if self.region.strip().upper() == grid.grid else f" (from region {self.region.strip()})"
            intensity_source = f"{grid.source}, {grid.kind} {grid.grid}{via}"
        else:
            intensity_source = "not configured (set energy.region or energy.carbon_intensity_gco2e_per_kwh)"
        if self.usd_per_kwh is None:
            usd_source = "not configured"
        else:
            usd_source = f"configured (as of {self.usd_per_kwh_as_of})" if self.usd_per_kwh_as_of else "configured"
        return EnergyFactors(
            pue=self.pue, pue_source=pue_source, gco2e_per_kwh=gco2e, intensity_source=intensity_source,
            usd_per_kwh=self.usd_per_kwh, usd_per_kwh_source=usd_source,
        )


def merge(base: EnergySettings, override: EnergySettings | None) -> EnergySettings:
    """``base`` (the top-level section) with the fields set in ``override`` (a cluster's section)
    winning; None: ``base``. A figure and its notes go together: an override that sets ``pue``
    drops the base's ``pue_source``, one that sets an intensity or a ``region`` takes none of the
    base's intensity, source, as-of or region, one that sets ``usd_per_kwh`` drops its as-of.
    The result's ``model_fields_set`` is what either set, so defaults still read as defaults."""
    if override is None:
        return base
    fields = dict(base.model_dump(include=base.model_fields_set))
    for group in _GROUPS:
        if override.model_fields_set & set(group):
            for name in group:
                fields.pop(name, None)
    fields.update(override.model_dump(include=override.model_fields_set))
    return EnergySettings.model_validate(fields)


@dataclass(frozen=True)
class EnergyFactors:
    """The resolved energy figures of one cluster. ``pue`` (facility energy / IT energy) and where it
    came from; ``gco2e_per_kwh``, the grid's carbon intensity in g CO2e per kWh (None: not known,
    so no carbon is reported) and its source; ``usd_per_kwh``, the electricity price in USD per kWh
    (None: not configured) and its source."""

    pue: float
    pue_source: str
    gco2e_per_kwh: float | None
    intensity_source: str
    usd_per_kwh: float | None
    usd_per_kwh_source: str

    def facility_kwh(self, gpu_kwh: float) -> float:
        """The facility's kWh for ``gpu_kwh`` of GPU energy: ``gpu_kwh`` x PUE."""
        return gpu_kwh * self.pue

    def co2e_kg(self, gpu_kwh: float) -> float | None:
        """kg CO2e for ``gpu_kwh`` of GPU energy: facility kWh x g CO2e per kWh / 1000; None when
        the grid's intensity is not known."""
        if self.gco2e_per_kwh is None:
            return None
        return self.facility_kwh(gpu_kwh) * self.gco2e_per_kwh / 1000

    def describe(self) -> str:
        """One sentence for reports, e.g. ``PUE 1.3 (configured); 283.89 g CO2e/kWh: US EPA eGRID2022,
        subregion SRVC (from region us-east-1); $0.11/kWh (configured)``."""
        parts = [f"PUE {self.pue:g} ({self.pue_source})"]
        if self.gco2e_per_kwh is None:
            parts.append(f"carbon {self.intensity_source}")
        else:
            parts.append(f"{self.gco2e_per_kwh:g} g CO2e/kWh: {self.intensity_source}")
        if self.usd_per_kwh is not None:
            parts.append(f"${self.usd_per_kwh:g}/kWh ({self.usd_per_kwh_source})")
        return "; ".join(parts)
