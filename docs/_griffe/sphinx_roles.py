r"""A griffe extension: show the docstrings' Sphinx markup as Markdown in the API reference.

featlearn's docstrings are Google style (ruff's ``D`` rules check them) and name other
objects with Sphinx roles (``:class:`~featlearn.batches.TrainBatch```, ``:meth:`compute```,
``:math:`\gamma```) and show formulas in ``.. math::`` blocks; Markdown knows neither. This
extension rewrites them in the text griffe hands to mkdocstrings, never in the sources:

* a role whose target griffe finds (as written, or relative to the object that names it)
  becomes a link to the target's entry, as an *optional* cross-reference, so a target that
  no page renders (a private helper) stays plain code and never fails ``--strict``;
* any other role, and ``:math:``, becomes inline code;
* a ``.. math::`` line is dropped: the indented formula under it reads as a code block.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(class|meth|mod|func|attr|data|obj|exc|math):`([^`]+)`(\\ )?")
MATH_DIRECTIVE = re.compile(r"^[ \t]*\.\. math::[ \t]*\n", flags=re.M)


def find(obj: griffe.Object, target: str) -> str | None:
    """The canonical path of ``target`` as ``obj``'s docstring names it, or None if griffe has no such object."""
    collection = obj.modules_collection
    scopes = [obj, *_parents(obj)]
    candidates = [target] + [f"{scope.path}.{target}" for scope in scopes]
    for candidate in candidates:
        try:
            found = collection.get_member(candidate)
        except Exception:  # noqa: BLE001 (griffe raises several kinds for a missing path)
            continue
        try:
            return found.final_target.path if found.is_alias else found.path
        except Exception:  # noqa: BLE001 (an alias to an external object)
            return None
    return None


def _parents(obj: griffe.Object) -> list[griffe.Object]:
    parents, node = [], obj.parent
    while node is not None:
        parents.append(node)
        node = node.parent
    return parents


def markdown(obj: griffe.Object, text: str) -> str:
    """``text`` with its Sphinx roles and ``.. math::`` lines rewritten (see the module docstring)."""

    def role(match: re.Match) -> str:
        kind, target = match.group(1), match.group(2)
        if kind == "math":
            return f"`{target}`"
        shown = target.lstrip("~")
        if target.startswith("~"):
            shown = shown.rsplit(".", 1)[-1]
        path = find(obj, target.lstrip("~").removesuffix("()"))
        if path is None:
            return f"`{shown}`"
        return f'<autoref identifier="{path}" optional><code>{shown}</code></autoref>'

    return MATH_DIRECTIVE.sub("", ROLE.sub(role, text))


class SphinxRoles(griffe.Extension):
    """Rewrite every docstring of a loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """Rewrite the docstrings of ``pkg`` and of every object in it."""
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if obj.docstring is not None:
                obj.docstring.value = markdown(obj, obj.docstring.value)
            stack.extend(member for member in obj.members.values() if not member.is_alias)
