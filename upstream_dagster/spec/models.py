"""The models behind estate.yaml. Strict: an unknown key is an error, never ignored.

New blocks are added as optional fields with defaults, so files written for an older Upstream
keep loading. A dataset belongs to the first tier (in file order) whose selectors match it.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_GLOB = re.compile(r"^[A-Za-z0-9_.*?\[\]!/\-]+$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_glob(pattern: str) -> str:
    if not pattern or not _GLOB.match(pattern):
        raise ValueError(
            f"name pattern {pattern!r} is not a glob over dataset names; use letters, digits, "
            "'_', '.', '-', '/' and the wildcards * ? [abc], e.g. 'fct_*' or 'marts.agg_*'"
        )
    depth = 0
    for char in pattern:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth not in (0, 1):
            raise ValueError(f"name pattern {pattern!r} has a misplaced ']' or nested '['")
    if depth:
        raise ValueError(f"name pattern {pattern!r} opens a '[' it never closes")
    if ".." in pattern or pattern.startswith(".") or pattern.endswith("."):
        raise ValueError(f"name pattern {pattern!r} has an empty part between dots")
    return pattern


class Selector(Strict):
    """One selector: every key given must match (AND). A tier's list of selectors is an OR."""

    domains: list[str] = Field(default_factory=list, description="domain names or URNs")
    names: list[str] = Field(default_factory=list, description="globs over dataset names")
    platforms: list[str] = Field(default_factory=list, description="e.g. dbt, snowflake")
    tags: list[str] = Field(default_factory=list, description="tag names or URNs")
    terms: list[str] = Field(default_factory=list, description="glossary term names or URNs")
    owners: list[str] = Field(default_factory=list, description="user names or URNs")
    urns: list[str] = Field(default_factory=list, description="explicit dataset URNs")

    def describe(self) -> str:
        """The selector as estate.yaml wrote it, e.g. 'tags: tier1; names: fct_*, agg_*'."""
        keys = ("domains", "names", "platforms", "tags", "terms", "owners", "urns")
        parts = [f"{k}: {', '.join(getattr(self, k))}" for k in keys if getattr(self, k)]
        return "; ".join(parts) or "(empty)"

    @field_validator("names")
    @classmethod
    def _globs(cls, names: list[str]) -> list[str]:
        return [_check_glob(n) for n in names]

    @field_validator("urns")
    @classmethod
    def _urns(cls, urns: list[str]) -> list[str]:
        for urn in urns:
            if not urn.startswith("urn:li:"):
                raise ValueError(f"{urn!r} is not a DataHub URN (they start with 'urn:li:')")
        return urns

    @model_validator(mode="after")
    def _not_empty(self) -> Selector:
        if not any(getattr(self, f) for f in type(self).model_fields):
            raise ValueError(
                "an empty selector would match every dataset; give at least one of "
                + ", ".join(type(self).model_fields)
            )
        return self


# Keys that qualify a requirement rather than being one: never scored on their own
MODIFIERS = frozenset({"accept_generated_descriptions"})


class Requirements(Strict):
    require_owner: bool = False
    require_description: bool = False
    require_glossary_term: bool = False
    require_domain: bool = False
    require_tags: list[str] = Field(default_factory=list)
    min_assertions: int = Field(default=0, ge=0)
    freshness_sla_hours: float | None = Field(default=None, gt=0)
    max_open_incident_hours: float | None = Field(default=None, gt=0)
    required_structured_properties: list[str] = Field(default_factory=list)
    # The share (0..1) of seeded faults on the tier's assets and their feeds that the estate's
    # checks must catch, measured in a sandbox by `upstream detect` (policies.detection)
    min_fault_detection: float | None = Field(default=None, allow_inf_nan=False)
    # A description Upstream generated from the graph (labelled so in DataHub) meets
    # require_description only where this is on; a person's text always does.
    accept_generated_descriptions: bool = False

    def active(self) -> list[str]:
        """The requirements this tier actually asks for, in a stable order."""
        out = []
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name not in MODIFIERS and value not in (False, None, 0, []):
                out.append(name)
        return out

    @field_validator("min_fault_detection")
    @classmethod
    def _share(cls, value: float | None) -> float | None:
        if value is None or 0 < value <= 1:
            return value
        if 1 < value <= 100:
            raise ValueError(
                f"min_fault_detection is a share from 0 to 1, not a percentage: write "
                f"{value / 100:g} for {value:g}%"
            )
        raise ValueError(
            "min_fault_detection is the share of faults the checks must catch, more than 0 and "
            "at most 1 (e.g. 0.8); remove it to ask for none"
        )

    @model_validator(mode="after")
    def _modifies_a_requirement(self) -> Requirements:
        if self.accept_generated_descriptions and not self.require_description:
            raise ValueError(
                "accept_generated_descriptions qualifies require_description, which this tier "
                "does not ask for: set 'require_description: true' or remove it"
            )
        return self


DEFAULT_CRITICALITY = 0.5
MAX_TIERS = 500  # a tier is a class of assets; more than this is a generated file gone wrong


class Tier(Strict):
    name: str = Field(min_length=1)
    description: str = ""
    match: list[Selector] = Field(min_length=1)
    requirements: Requirements
    # How much a gap here matters to the business, from 0 (none) to 1 (revenue-critical).
    # Unset: not said, which pricing and risk read as the middle (DEFAULT_CRITICALITY); the
    # order of tiers in the file says nothing of it.
    criticality: float | None = Field(default=None, ge=0, le=1)

    @property
    def weight(self) -> float:
        return DEFAULT_CRITICALITY if self.criticality is None else self.criticality

    @model_validator(mode="after")
    def _asks_something(self) -> Tier:
        if not self.requirements.active():
            raise ValueError(
                f"tier {self.name!r} has no requirements: an empty tier scores "
                "nothing; add at least one, e.g. 'require_owner: true'"
            )
        return self


class Budgets(Strict):
    datahub_reads: int = Field(default=200, gt=0)
    forensic_queries: int = Field(default=20, ge=0)
    model_calls: int = Field(default=0, ge=0)
    # Each forensic query may run this long and use this much memory; past either it stops.
    query_seconds: float = Field(default=30, gt=0, le=3600, allow_inf_nan=False)
    query_memory_mb: int = Field(default=1024, ge=64, le=65536)
    # Each model call may take this long (one retry); an endpoint that does not answer is
    # given up on for the rest of the run.
    model_seconds: float = Field(default=20, gt=0, le=600, allow_inf_nan=False)


class ReliabilityPolicy(Strict):
    min_confidence_to_remediate: float = Field(default=0.7, ge=0, le=1)
    immunize_on_resolve: bool = True
    budgets: Budgets = Field(default_factory=Budgets)


class DetectionPolicy(Strict):
    """How `upstream detect` measures min_fault_detection: the seed of the draw (the same seed
    draws the same faults) and its budget: faults per tier, and seconds for the whole run
    (faults left when the time is spent are reported as not tried, never as caught)."""

    seed: int = Field(default=1, ge=0, le=2**31)
    faults_per_tier: int = Field(default=8, ge=1, le=200)
    max_seconds: float = Field(default=600, gt=0, le=6 * 3600, allow_inf_nan=False)


class RiskPolicy(Strict):
    """Names the business-critical parts of the graph; risk never guesses them from names."""

    critical_domains: list[str] = Field(default_factory=list)
    critical_terms: list[str] = Field(default_factory=list)


class Notify(Strict):
    """Where a nudge goes when something waits on a person: an incoming webhook in Slack's
    shape. The URL is a secret, so estate.yaml names the environment variable holding it."""

    webhook_env: str = Field(default="UPSTREAM_WEBHOOK_URL", pattern=r"^[A-Z_][A-Z0-9_]*$")
    ui_url: str = Field(default="http://localhost:3000", description="The Dagster UI's address")
    attempts: int = Field(default=3, ge=1, le=20, description="Ticks to retry a failing send")


class Policies(Strict):
    actuation: Literal["dry-run", "ratify", "auto"] = "dry-run"  # writes nothing by default
    max_proposals_per_run: int = Field(default=25, gt=0)
    approvers: list[Annotated[str, Field(min_length=1, pattern=r"\S")]] = Field(
        default_factory=list
    )
    max_auto_risk: float = Field(default=0.3, ge=0, le=1)
    # Who an approval is from. "signed": each approval carries an ed25519 signature over what
    # it approves, by the key approver_keys lists for that name (`upstream keygen NAME` makes
    # one). "datahub": against a DataHub server, the reviewer's own DataHub token says who they
    # are (asked once through GraphQL `me`, never stored). "not-enforced": a typed name is
    # taken at its word: for a demo, never production.
    identity: Literal["signed", "datahub", "not-enforced"] = "signed"
    approver_keys: dict[str, Annotated[str, Field(pattern=r"^[A-Za-z0-9+/]{43}=$")]] = Field(
        default_factory=dict
    )
    reliability: ReliabilityPolicy = Field(default_factory=ReliabilityPolicy)
    detection: DetectionPolicy = Field(default_factory=DetectionPolicy)
    risk: RiskPolicy = Field(default_factory=RiskPolicy)
    notify: Notify | None = None  # unset: no nudges

    @model_validator(mode="after")
    def _someone_approves(self) -> Policies:
        if self.actuation != "dry-run" and not self.approvers:
            raise ValueError(
                f"actuation {self.actuation!r} needs someone to approve: name who "
                "may in 'approvers', or use 'actuation: dry-run'"
            )
        unknown = sorted(set(self.approver_keys) - set(self.approvers))
        if unknown:
            raise ValueError(
                f"approver_keys names {', '.join(unknown)}, who is not in approvers: add them "
                "to approvers or remove the key"
            )
        return self


MonitorRule = Literal["zero_values", "drop_vs_trailing_average", "volume", "null_rate_jump"]
_NEEDS_COLUMNS = {"zero_values", "drop_vs_trailing_average", "null_rate_jump"}


class Monitor(Strict):
    """A deterministic rule run as a Dagster asset check after every build, reported into
    DataHub as an assertion with run events.

    zero_values: a column's total on the last complete day is zero (or the column is gone).
    drop_vs_trailing_average: a column's total on the last complete day is more than
      ``threshold`` (a fraction) below its average over the ``window_days`` before.
    volume: the last complete day's row count differs from the trailing average by more than
      ``threshold``; a table with no date column is compared with its previous observation.
    null_rate_jump: a column's share of NULLs rose by more than ``threshold`` since the
      previous observation.
    """

    name: str = Field(min_length=1, pattern=r"^[a-z][a-z0-9_]*$")
    rule: MonitorRule
    match: list[Selector] = Field(min_length=1)
    columns: list[str] = Field(default_factory=list)
    threshold: float = Field(default=0.5, gt=0, le=1)
    window_days: int = Field(default=7, ge=1, le=90)
    date_column: str | None = None

    @model_validator(mode="after")
    def _columns_named(self) -> Monitor:
        if self.rule in _NEEDS_COLUMNS and not self.columns:
            raise ValueError(
                f"monitor {self.name!r} ({self.rule}) watches columns: list them in 'columns', "
                "e.g. 'columns: [net_revenue]'"
            )
        return self


class EstateSpec(Strict):
    version: Literal[1] = 1
    tiers: list[Tier] = Field(min_length=1, max_length=MAX_TIERS)
    policies: Policies = Field(default_factory=Policies)
    monitors: list[Monitor] = Field(default_factory=list)

    @property
    def critical_tiers(self) -> set[str]:
        """The tiers declared the most critical; none when no tier declares a criticality."""
        declared = [t.criticality for t in self.tiers if t.criticality is not None]
        if not declared:
            return set()
        top = max(declared)
        return {t.name for t in self.tiers if t.criticality == top}

    @model_validator(mode="after")
    def _unique_tiers(self) -> EstateSpec:
        seen: set[str] = set()
        for tier in self.tiers:
            if tier.name in seen:
                raise ValueError(f"two tiers are named {tier.name!r}; tier names must be unique")
            seen.add(tier.name)
        names = [m.name for m in self.monitors]
        if len(names) != len(set(names)):
            raise ValueError("two monitors share a name; monitor names must be unique")
        return self
