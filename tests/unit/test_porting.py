"""wayline.porting.MODULE_MAP is the rename docs/porting.md documents, and every module it
names imports."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from wayline import porting

DOC = Path(__file__).resolve().parents[2] / "docs" / "porting.md"


def documented() -> dict[str, str]:
    text = DOC.read_text()
    table = text[text.index("## Module map") : text.index("The common names are also")]
    return dict(re.findall(r"^\| `(langgraph[\w.]*)` \| `(wayline[\w.]*)` \|", table, re.M))


def test_the_doc_table_is_the_map() -> None:
    assert documented() == porting.PORTS


def test_every_mapped_module_imports() -> None:
    for target in porting.MODULE_MAP.values():
        importlib.import_module(target)


def test_only_missing_packages_are_left_out() -> None:
    left_out = set(porting.PORTS) - set(porting.MODULE_MAP)
    assert all(porting.PORTS[k].startswith("wayline.memory.") for k in left_out)
