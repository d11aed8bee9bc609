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
import re
from typing import Any

log = logging.getLogger(__name__)
MODEL_ENV = "UPSTREAM_NARRATOR_MODEL"
TIMEOUT_ENV = "UPSTREAM_NARRATOR_TIMEOUT"
# One model call may take this long (one retry); an endpoint that does not answer is given up
# on for the rest of the run, so a plan waits at most about twice this, never minutes.
DEFAULT_TIMEOUT = 20.0
DEFAULT_MODEL = "claude-sonnet-4-5"
SYSTEM = (
    "You write one or two plain sentences describing a dataset for a data catalog. Use "
    "only the facts you are given; never invent business meaning, owners or numbers."
)


class Narrator:
    def __init__(self, budget: int, client: Any = None, seconds: float | None = None) -> None:
        self.budget = budget
        self.seconds = seconds
        self.used = 0
        self.skipped: list[str] = []
        self._client = client
        self._unreachable = ""

    @property
    def enabled(self) -> bool:
        return self._client is not None or bool(os.environ.get("ANTHROPIC_API_KEY"))

    def _messages(self) -> Any:
        if self._client is None:
            import anthropic

            seconds = float(os.environ.get(TIMEOUT_ENV) or self.seconds or DEFAULT_TIMEOUT)
            self._client = anthropic.Anthropic(timeout=seconds, max_retries=1)
        return self._client.messages

    def _ask(self, subject: str, system: str, content: str, max_tokens: int) -> str | None:
        """The model's text, or None (and the reason kept) when the template must be used."""
        if not self.enabled:
            return None
        if self._unreachable:
            self.skipped.append(f"{subject}: {self._unreachable}")
            return None
        if self.used >= self.budget:
            self.skipped.append(f"{subject}: model-call budget of {self.budget} used up")
            return None
        import anthropic

        self.used += 1
        try:
            reply = self._messages().create(
                model=os.environ.get(MODEL_ENV, DEFAULT_MODEL),
                max_tokens=max_tokens,
                system=system,
                messages=[{"role": "user", "content": content}],
            )
        except anthropic.APIConnectionError as exc:  # a timeout or no connection
            self._unreachable = (
                f"the model API did not answer ({exc.__class__.__name__}); the template is "
                "used for the rest of this run"
            )
            self.skipped.append(f"{subject}: {self._unreachable}")
            log.warning("narrator: %s", self._unreachable)
            return None
        except anthropic.APIError as exc:
            self.skipped.append(f"{subject}: the model API failed ({exc.__class__.__name__})")
            log.warning("narrator fell back to the template for %s: %s", subject, exc)
            return None
        text = " ".join(b.text for b in reply.content if getattr(b, "type", "") == "text").strip()
        if not text:
            self.skipped.append(f"{subject}: the model returned no text")
            return None
        return text

    def describe(self, asset: str, template: str, sources: tuple[str, ...]) -> str | None:
        """Prose for ``template``, ending with its sources; None means: use the template."""
        text = self._ask(asset, SYSTEM, f"Dataset {asset}.\nFacts: {template}", 200)
        return None if text is None else f"{text} (Sources: {'; '.join(sources)}.)"

    def grounded(self, subject: str, system: str, facts: str) -> str | None:
        """Prose over ``facts`` whose every sentence cites evidence [E<n>] the facts cite, and
        nothing else; None (the template) when the model's text breaks that rule."""
        allowed = set(CITE.findall(facts))
        text = self._ask(subject, system + GROUNDING, facts, 600)
        if text is None:
            return None
        sentences = [x for x in re.split(r"(?<=[.!?])\s+", text) if x.strip()]
        cited = set(CITE.findall(text))
        if not cited <= allowed or any(not CITE.search(x) for x in sentences):
            self.skipped.append(f"{subject}: the model's text cited evidence it was not given "
                                "or left a sentence uncited; the template is used")  # fmt: skip
            return None
        return text


CITE = re.compile(r"\[E\d+\]")
GROUNDING = (
    " Use only the facts given. End every sentence with the evidence markers, such as [E3], of "
    "the facts it rests on; never cite a marker the facts do not contain; never add a number, "
    "a name or a cause that is not in the facts."
)
RCA_SYSTEM = (
    "You write the summary paragraph of a root-cause analysis for a data incident, for the "
    "on-call engineer: what failed, what caused it and how the cause reached the symptom."
)
PR_SYSTEM = (
    "You write the description of a pull request that fixes a data incident, for the reviewer: "
    "what the change does and why it is needed."
)
