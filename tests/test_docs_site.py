"""The documentation site builds with ``mkdocs build --strict`` and renders in a real headless browser.

The build (about 15 s) and the browser (about 15 s more) put the site's tests in the slow suite; ``make test``
builds the site with ``--strict`` before the fast suite as well, so a broken page fails there first.
"""

import configparser
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from .conftest import REPO

#: The pages the browser opens: the home page and one API reference page (a package installed from datamodules/).
HOME = "index.html"
API_PAGE = "api/datamodules/index.html"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once for this module into a temporary folder."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        pytest.importorskip(module, reason="the docs extra is not installed: pip install -e '.[docs]' (make setup)")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml")]
    done = subprocess.run([*command, "--site-dir", str(out)], cwd=REPO, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-5000:]
    return out


def browser() -> str:
    """Debian's chromium (``make browser`` installs it); the test skips without one."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("no chromium here to render the site (make browser, or apt-get install chromium)")
    return found


def chromium(page: Path, *options: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,1600", *options]
    return subprocess.run(
        [browser(), *flags, page.as_uri()], check=True, capture_output=True, text=True, timeout=120
    )  # fmt: skip


def rendered_text(page: Path) -> str:
    """The page's text after the browser ran its scripts (``--dump-dom``), tags stripped, spaces collapsed."""
    dom = chromium(page, "--dump-dom").stdout
    text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", dom, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", text).split())


def screenshot(page: Path, shot: Path):
    from PIL import Image

    chromium(page, f"--screenshot={shot}")
    return Image.open(shot).convert("RGB")


@pytest.mark.slow
def test_the_home_page_renders_with_its_theme_and_navigation(site, tmp_path):
    text = rendered_text(site / HOME)
    for words in ("featlearn", "Two commands", "make run", "Getting started", "API reference", "Extending"):
        assert words in text, words
    image = screenshot(site / HOME, tmp_path / "home.png")
    assert image.size == (1280, 1600)
    # Material's indigo header bar is drawn: its stylesheet loaded (a bare page is white there).
    red, green, blue = image.getpixel((image.width // 2, 10))
    assert blue > 150 and red < 120 and green < 120, (red, green, blue)
    low, high = image.convert("L").getextrema()
    assert high - low > 100  # text drawn, not a blank page


@pytest.mark.slow
def test_an_api_page_shows_the_docstrings_of_a_package_installed_from_its_own_folder(site, tmp_path):
    text = rendered_text(site / API_PAGE)
    # featlearn.datamodules lives in datamodules/ (setup.cfg's package_dir): griffe found it, classes and methods.
    for words in ("featlearn.datamodules", "SyntheticDataModule", "BooleanXOR", "ground_truth", "Parameters"):
        assert words in text, words
    assert ":class:" not in text and ":meth:" not in text  # the docstrings' Sphinx roles became Markdown
    image = screenshot(site / API_PAGE, tmp_path / "api.png")
    red, green, blue = image.getpixel((image.width // 2, 10))
    assert blue > 150 and red < 120 and green < 120, (red, green, blue)


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.sources: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.sources.append(dict(attrs)["src"])


@pytest.mark.slow
@pytest.mark.parametrize("report", ["shi2022-cpu", "glasgow2023-cpu", "barak2022-cpu"])
def test_the_committed_reports_are_pages_with_their_figures(site, report):
    page = site / "reproduction" / report / "report" / "index.html"
    images = _Images()
    images.feed(page.read_text())
    figures = sorted((REPO / "docs" / "reproduction" / report / "figures").glob("*.png"))
    assert images.sources and len(images.sources) <= len(figures)
    for source in images.sources:
        assert (page.parent / source).resolve().is_file(), source


#: The first screen a referee sees: a laptop's browser window.
FIRST_SCREEN = (1280, 900)
#: Injected into a copy of a page: where the page's first content table starts, and its first heading cell.
PROBE = (
    "<script>addEventListener('load', () => {const t = document.querySelector('article table, body > table');"
    "const b = document.body; b.dataset.top = t ? t.getBoundingClientRect().top : -1;"
    "b.dataset.head = t ? t.querySelector('th').textContent : ''; b.dataset.screen = innerHeight;});</script>"
)


def first_table_on_screen(page: Path) -> tuple[float, str, float]:
    """(top of the page's first content table in px, its first heading cell, the window's height), as chromium lays out.

    The probe runs in a copy beside the page, so its stylesheets and scripts load as the page's own.
    """
    probe = page.with_name(f"probe_{page.name}")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    width, height = FIRST_SCREEN
    dom = chromium(probe, "--dump-dom", "--virtual-time-budget=3000", f"--window-size={width},{height}")
    found = dict(re.findall(r'data-(top|head|screen)="([^"]*)"', dom.stdout))
    return float(found["top"]), found["head"], float(found["screen"])


def reports_with_claims() -> list[str]:
    """The committed reports judged with claims (a report that predates them has no claims matrix to show)."""
    folders = sorted((REPO / "docs" / "reproduction").glob("*/results.json"))
    return [f.parent.name for f in folders if '"claims"' in f.read_text()]


@pytest.mark.parametrize("report", reports_with_claims())
def test_a_committed_report_opens_with_its_claims_matrix_on_the_first_screen(tmp_path, report):
    page = tmp_path / "report.html"
    shutil.copyfile(REPO / "docs" / "reproduction" / report / "report.html", page)
    top, head, screen = first_table_on_screen(page)
    assert head == "Claim" and 0 < top < screen, (top, head, screen)


@pytest.mark.slow
@pytest.mark.parametrize("report", reports_with_claims())
def test_the_docs_site_report_page_shows_the_claims_matrix_on_the_first_screen(site, report):
    top, head, screen = first_table_on_screen(site / "reproduction" / report / "report" / "index.html")
    assert head == "Claim" and 0 < top < screen, (top, head, screen)
    paper, _, scale = report.partition("-")
    if scale != "cpu":
        return  # a partial report (shi2022-calibration) is a section of its paper's page, not the page's headline
    top, head, screen = first_table_on_screen(site / paper / "index.html")  # the paper's page opens with it
    assert head == "Claim" and 0 < top < screen, (top, head, screen)


def test_the_architecture_page_names_every_import_contract():
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    contracts = [s.split(":")[-1] for s in parser.sections() if s.startswith("importlinter:contract:")]
    text = (REPO / "docs" / "architecture.md").read_text()
    assert contracts and [name for name in contracts if f"| `{name}` |" not in text] == []
