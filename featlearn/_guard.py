"""Refuse bare imports of the mapped packages (``import models``)."""

from __future__ import annotations


def require_featlearn_namespace(module_name: str, folder: str) -> None:
    """Raise ImportError unless the package was imported as ``featlearn.<folder>``.

    The repository keeps ``datamodules/``, ``models/`` and ``callbacks/`` at its top
    level, but they are installed only as ``featlearn.datamodules`` and so on. Run
    from the repository root, Python would also find them as bare top-level
    packages, shadowing other projects' ``models`` or ``callbacks``.

    Args:
        module_name: The importing package's ``__name__``.
        folder: The folder name (``models``).

    Raises:
        ImportError: If ``module_name`` is not ``featlearn.<folder>``.
    """
    expected = f"featlearn.{folder}"
    if module_name != expected:
        raise ImportError(
            f"'{folder}' is part of featlearn: import it as `{expected}`, not `{module_name}`. "
            f"Install the project with `pip install -e .` (or run `make test`) so that "
            f"`{expected}` resolves."
        )
