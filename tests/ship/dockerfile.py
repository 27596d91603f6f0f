"""A small reader of Dockerfile instructions: enough to check our Dockerfile's properties.

It handles comments, parser directives, line continuations and the JSON ("exec") form; it does
not expand variables except ``ARG`` defaults in ``FROM``, which is all the checks need.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case
    arguments: str  # the rest of the (joined) line

    def exec_form(self) -> list[str] | None:
        """The JSON array of an exec-form instruction, else None."""
        text = self.arguments.strip()
        if not text.startswith("["):
            return None
        parsed = json.loads(text)
        assert isinstance(parsed, list) and all(isinstance(item, str) for item in parsed)
        return parsed

    def pairs(self) -> dict[str, str]:
        """``KEY=VALUE`` pairs of ENV / LABEL / ARG instructions."""
        result: dict[str, str] = {}
        for token in shlex.split(self.arguments):
            key, sep, value = token.partition("=")
            result[key] = value if sep else ""
        return result


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def env(self) -> dict[str, str]:
        merged: dict[str, str] = {}
        for instruction in self.all("ENV"):
            merged.update(instruction.pairs())
        return merged


@dataclass
class Dockerfile:
    global_args: dict[str, str]
    stages: list[Stage]

    @property
    def final(self) -> Stage:
        return self.stages[-1]

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    current = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue  # comments and parser directives between instructions
        if current and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        lines.append(current + stripped)
        current = ""
    if current:
        lines.append(current.strip())
    return lines


def parse(path: Path) -> Dockerfile:
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in _logical_lines(path.read_text(encoding="utf-8")):
        keyword, _, arguments = line.partition(" ")
        instruction = Instruction(keyword.upper(), re.sub(r"\s+", " ", arguments).strip())
        if instruction.keyword == "FROM":
            words = instruction.arguments.split()
            base = re.sub(
                r"\$\{(\w+)\}|\$(\w+)",
                lambda m: global_args.get(m.group(1) or m.group(2), m.group(0)),
                words[0],
            )
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base, name))
        elif not stages:
            assert instruction.keyword == "ARG", f"{instruction.keyword} before the first FROM"
            global_args.update(instruction.pairs())
        else:
            stages[-1].instructions.append(instruction)
    return Dockerfile(global_args, stages)
