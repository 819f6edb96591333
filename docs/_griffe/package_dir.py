"""A griffe extension: document featlearn's parts from the folders that setup.cfg installs them from.

``setup.cfg``'s ``[options] package_dir`` installs ``featlearn.datamodules`` from the
top-level folder ``datamodules/`` (likewise ``models/``, ``callbacks/``). Python finds them
through the install; griffe, which reads source files without importing them, looks for
``featlearn/datamodules/`` and finds nothing. When griffe has loaded the ``featlearn``
package, this extension reads ``package_dir`` and attaches each mapped folder as the
submodule it is installed as, so ``::: featlearn.datamodules`` in a page documents
``datamodules/``. mkdocs.yml names this file in mkdocstrings' ``extensions``.
"""

from __future__ import annotations

import configparser
from pathlib import Path
from typing import Any

import griffe

REPO = Path(__file__).resolve().parents[2]


def package_dirs(setup_cfg: Path = REPO / "setup.cfg") -> dict[str, Path]:
    """The dotted package names that ``package_dir`` maps to a folder, and those folders."""
    parser = configparser.ConfigParser()
    parser.read(setup_cfg)
    mapping = {}
    for line in parser["options"]["package_dir"].strip().splitlines():
        name, _, folder = (part.strip() for part in line.partition("="))
        mapping[name] = setup_cfg.parent / folder
    return mapping


class PackageDir(griffe.Extension):
    """Attach the folders ``package_dir`` maps under a package to that package, as griffe modules."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """Load every folder mapped to a direct child of ``pkg`` that griffe did not find by itself."""
        for name, folder in package_dirs().items():
            parent, _, child = name.rpartition(".")
            init = folder / "__init__.py"
            if parent != pkg.path or child in pkg.members or not init.is_file():
                continue
            module = loader._load_module(child, init, parent=pkg)  # noqa: SLF001 (no public call loads a submodule)
            pkg.set_member(child, module)
            loader.expand_exports(module)
            loader.expand_wildcards(module, external=False)
