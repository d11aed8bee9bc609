"""estate.yaml: the whole configuration surface, as strict pydantic models."""

from upstream_dagster.spec.loader import SpecError, load_estate
from upstream_dagster.spec.models import EstateSpec, Requirements, Selector, Tier

__all__ = ["EstateSpec", "Requirements", "Selector", "SpecError", "Tier", "load_estate"]
