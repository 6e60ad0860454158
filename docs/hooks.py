"""MkDocs hook: the shipped agents' model cards become pages of the site, read where they
live (``checkpoints/NAME/MODEL_CARD.md`` and the pictures beside it), never copied.

Each card is added as the page ``agents/NAME.md`` and its pictures as
``agents/NAME/*.png``; ``checkpoints/README.md`` (the folder's rule and the rebuild
commands) becomes ``agents/checkpoints.md``. A card links its pictures by bare file name
(``learning_curve.png``, as it reads on GitHub beside them), so on its page those links
are pointed at the card's own folder.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from fivethousand_rl.agents.shipped import SHIPPED

CARDS_FOLDER = "agents"  # the site folder of the card pages (beside docs/agents.md)
CHECKPOINTS_PAGE = f"{CARDS_FOLDER}/checkpoints.md"
# A Markdown image (or link) whose target is a bare picture name of the card's folder.
_LOCAL_PICTURE = re.compile(r"(\]\()([\w.-]+\.png)(\))")


def checkpoints_folder(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent / "checkpoints"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    checkpoints = checkpoints_folder(config)
    for name in SHIPPED:
        folder = checkpoints / name
        card = folder / "MODEL_CARD.md"
        files.append(File.generated(config, f"{CARDS_FOLDER}/{name}.md", abs_src_path=str(card)))
        for picture in sorted(folder.glob("*.png")):
            uri = f"{CARDS_FOLDER}/{name}/{picture.name}"
            files.append(File.generated(config, uri, abs_src_path=str(picture)))
    readme = checkpoints / "README.md"
    files.append(File.generated(config, CHECKPOINTS_PAGE, abs_src_path=str(readme)))
    return files


# Where docs/rules.md shows the rules in short: the text the terminal's `rules` prints
# (fivethousand_rl.envs.rules_text), one source for both.
RULES_IN_SHORT = (
    "<!-- the rules in short: fivethousand_rl.envs.rules_text, written in by docs/hooks.py -->"
)


def rules_in_short() -> str:
    """The standard rules in short, as Markdown (English)."""
    from fivethousand_rl.envs.rules_text import rules_sections

    blocks = []
    for title, lines in rules_sections():
        blocks.append("\n".join([f"**{title}**", "", *(f"- {line}" for line in lines)]))
    return "\n\n".join(blocks)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """The rules in short written into the rules page; a card's links to the files beside
    it pointed at its pictures' site folder."""
    if page.file.src_uri == "rules.md":
        return markdown.replace(RULES_IN_SHORT, rules_in_short())
    folder, _, stem = page.file.src_uri.rpartition("/")
    if folder != CARDS_FOLDER or stem.removesuffix(".md") not in SHIPPED:
        return markdown
    name = stem.removesuffix(".md")
    return _LOCAL_PICTURE.sub(lambda m: f"{m[1]}{name}/{m[2]}{m[3]}", markdown)
