"""The optional narrator: prose from a model, never a decision.

With ``ANTHROPIC_API_KEY`` set, the anthropic SDK rewrites a deterministic description template
as readable prose. The facts, the citations and every decision stay with code: the prose is
built only from the template's facts, always ends with the sources the template cited, and is
shown to the reviewer before anything is written. Without a key (or past the model-call budget
in estate.yaml, or when the API fails) the template is used, and the reason is logged.
"""

from __future__ import annotations

import logging
import os
from typing import Any

log = logging.getLogger(__name__)
MODEL_ENV = "UPSTREAM_NARRATOR_MODEL"
DEFAULT_MODEL = "claude-sonnet-4-5"
SYSTEM = (
    "You write one or two plain sentences describing a dataset for a data catalog. Use "
    "only the facts you are given; never invent business meaning, owners or numbers."
)


class Narrator:
    def __init__(self, budget: int, client: Any = None) -> None:
        self.budget = budget
        self.used = 0
        self.skipped: list[str] = []
        self._client = client

    @property
    def enabled(self) -> bool:
        return self._client is not None or bool(os.environ.get("ANTHROPIC_API_KEY"))

    def _messages(self) -> Any:
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic()
        return self._client.messages

    def describe(self, asset: str, template: str, sources: tuple[str, ...]) -> str | None:
        """Prose for ``template``, ending with its sources; None means: use the template."""
        if not self.enabled:
            return None
        if self.used >= self.budget:
            self.skipped.append(f"{asset}: model-call budget of {self.budget} used up")
            return None
        import anthropic

        self.used += 1
        try:
            reply = self._messages().create(
                model=os.environ.get(MODEL_ENV, DEFAULT_MODEL),
                max_tokens=200,
                system=SYSTEM,
                messages=[{"role": "user", "content": f"Dataset {asset}.\nFacts: {template}"}],
            )
        except anthropic.APIError as exc:
            self.skipped.append(f"{asset}: the model API failed ({exc.__class__.__name__})")
            log.warning("narrator fell back to the template for %s: %s", asset, exc)
            return None
        text = " ".join(b.text for b in reply.content if getattr(b, "type", "") == "text").strip()
        if not text:
            self.skipped.append(f"{asset}: the model returned no text")
            return None
        return f"{text} (Sources: {'; '.join(sources)}.)"
