"""Contracts for the replay tests: a ticket, the same ticket tightened, loosened, with a new required field, with a
new defaulted field, and a versioned one; importable by name (``support.replay_contracts:Tight``) for the
``guardrail replay`` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


class Tight(BaseModel):
    """The ticket with urgency capped at 3."""

    urgency: int = Field(ge=1, le=3)
    summary: str


class Loose(BaseModel):
    """The ticket with urgency up to 9."""

    urgency: int = Field(ge=1, le=9)
    summary: str


class WithOwner(BaseModel):
    """The ticket with a new required field."""

    urgency: int = Field(ge=1, le=5)
    summary: str
    owner: str


class WithPriority(BaseModel):
    """The ticket with a new field that has a default (every value changes)."""

    urgency: int = Field(ge=1, le=5)
    summary: str
    priority: str = "normal"


class Versioned(BaseModel):
    """A ticket whose schema names its version."""

    model_config = ConfigDict(json_schema_extra={"version": "2024-06"})

    urgency: int = Field(ge=1, le=5)
    summary: str


class Dunder(BaseModel):
    """A ticket with a ``__version__``."""

    __version__ = "3"

    urgency: int = Field(ge=1, le=5)
    summary: str


def ticket(urgency: int, summary: str = "late parcel") -> str:
    """A ticket answer as JSON text."""
    return f'{{"urgency": {urgency}, "summary": "{summary}"}}'


def records(path: Path) -> list[dict[str, Any]]:
    """Every record of a recording, in order."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
