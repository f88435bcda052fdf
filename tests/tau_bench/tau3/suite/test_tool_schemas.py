"""The τ³ tool-schema generator against toolkits of our own written in upstream's shape.

No upstream source is used here: each fixture module below is ours, and the expected
schemas are built independently with pydantic `create_model` from classes defined in
this test. The byte-exact check against the real upstream source is
`upstream_tool_schemas_check.py` (needs `TAU3_UPSTREAM_SRC`).
"""

from __future__ import annotations

import json
import re
from enum import Enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, create_model

from tau_bench.data.tau3_docstrings import DocstringError, parse_docstring
from tau_bench.data.tau3_toolschemas import ToolSchemaError, render, toolkit_schemas

KIT = '''
def is_tool(kind=None):
    def mark(func):
        func.__tool__ = True
        return func
    return mark


class ToolKitBase:
    """Holds no tools."""

    def __init__(self, db=None):
        self.db = db
'''

UTILS = """
from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
"""

MODELS = '''
from enum import Enum
from typing import Optional

import pydantic
from pydantic import BaseModel, Field

from tau2.utils.strict import Strict

Size = Literal["small", "large"]


class Colour(str, Enum):  # noqa: UP042 - the shape upstream uses
    RED = "red"
    BLUE = "blue"


class Item(BaseModel):
    sku: str = Field(description="Stock keeping unit")
    count: int = Field(1, description="How many")
    note: Optional[str] = None


class Box(Strict):
    """A box of things.

    Sealed on dispatch.
    """

    colour: Colour = pydantic.Field(Colour.RED, description="Paint")
    size: Size = "small"

    def volume(self) -> int:
        return 0
'''.replace("from typing import Optional", "from typing import Literal, Optional")

TOOLS = '''
from typing import List, Literal, Union

from tau2.environment.toolkit import ToolKitBase, is_tool
from .models import Box, Item, Size


class BaseShop(ToolKitBase):
    @is_tool()
    def ping(self) -> str:
        """Check the shop is open."""
        return "pong"

    @is_tool()
    def wave(self) -> str:
        """Wave (base version)."""
        return ""


class Shop(BaseShop):
    """A shop."""

    def _helper(self, x: int) -> int:
        return x

    @is_tool()
    def order(self, items: List[Item | dict], size: Size, urgent: bool = False) -> str:
        """Place an order.

        The order is charged at once.
        Returns cannot be undone.

        Args:
            items: What to order,
                one entry per line.
            size: The parcel size.
            urgent (bool, optional): Ship today.

        Returns:
            The order id.

        Raises:
            ValueError: If the order is empty.
        """
        return ""

    @is_tool()
    def pack(self, box: Union[Box, dict], label: str = None, *, copies: int = 2) -> str:
        """Pack a box.
        Args:
            box: The box.
            label: A label.
        Note: outdented text ends the section.
            copies: Ignored, after the outdented line.
        """
        return ""

    @is_tool()
    def wave(self, mode: Literal["left", "right"]) -> str:
        return ""

    @is_discoverable_tool()
    def secret(self) -> str:
        """Hidden from the list."""
        return ""

    # @is_tool()
    def retired(self) -> str:
        """Not a tool any more."""
        return ""

    @is_tool()
    def broken_doc(self, code: str) -> str:
        """Look up a code.

        Args:
            code without a colon
        """
        return ""
'''

SOURCES = {
    "src/tau2/environment/toolkit.py": KIT,
    "src/tau2/utils/strict.py": UTILS,
    "src/tau2/shop/models.py": MODELS,
    "src/tau2/shop/tools.py": TOOLS,
}


class Colour(str, Enum):  # noqa: UP042 - the shape upstream uses
    RED = "red"
    BLUE = "blue"


class Item(BaseModel):
    sku: str = Field(description="Stock keeping unit")
    count: int = Field(1, description="How many")
    note: str | None = None


class Box(BaseModel):
    """A box of things.

    Sealed on dispatch.
    """

    model_config = ConfigDict(extra="forbid")
    colour: Colour = Field(Colour.RED, description="Paint")
    size: Literal["small", "large"] = "small"


def _tool(name: str, description: str, **fields: Any) -> dict[str, Any]:
    model = create_model("parameters", **fields)
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": model.model_json_schema(),
        },
    }


EXPECTED = [
    _tool(
        "order",
        "Place an order.\n\nThe order is charged at once.\nReturns cannot be undone.",
        items=(list[Item | dict], Field(..., description="What to order,\none entry per line.")),
        size=(Literal["small", "large"], Field(..., description="The parcel size.")),
        urgent=(bool, Field(False, description="Ship today.")),
    ),
    _tool(
        "pack",
        "Pack a box.",
        box=(Box | dict, Field(..., description="The box.")),
        label=(str, Field(None, description="A label.")),
        copies=(int, 2),
    ),
    _tool("wave", "wave", mode=(Literal["left", "right"], ...)),
    _tool("broken_doc", "Look up a code.\n\nArgs:\n    code without a colon", code=(str, ...)),
    _tool("ping", "Check the shop is open."),
]


def test_fixture_toolkit_matches_schemas_built_with_create_model() -> None:
    built = toolkit_schemas(SOURCES, "tau2.shop.tools", "Shop")
    assert [t["function"]["name"] for t in built] == [t["function"]["name"] for t in EXPECTED]
    assert built == EXPECTED
    assert render(built) == (json.dumps(EXPECTED, indent=2) + "\n").encode()


def test_nested_models_are_defs_with_their_docstring_config_and_enum() -> None:
    pack = toolkit_schemas(SOURCES, "tau2.shop.tools", "Shop")[1]["function"]["parameters"]
    box = pack["$defs"]["Box"]
    assert box["additionalProperties"] is False
    assert box["description"] == "A box of things.\n\nSealed on dispatch."
    assert pack["$defs"]["Colour"]["enum"] == ["red", "blue"]
    assert box["properties"]["colour"]["default"] == "red"


def test_base_toolkit_lists_only_its_own_tools() -> None:
    names = [t["function"]["name"] for t in toolkit_schemas(SOURCES, "tau2.shop.tools", "BaseShop")]
    assert names == ["ping", "wave"]


def test_a_module_missing_from_the_sources_is_named() -> None:
    sources = {k: v for k, v in SOURCES.items() if "models" not in k}
    with pytest.raises(ToolSchemaError, match=re.escape("src/tau2/shop/models.py")):
        toolkit_schemas(sources, "tau2.shop.tools", "Shop")


@pytest.mark.parametrize(
    "default", ["__import__('os').getcwd()", "open('x')", "lambda: 1", "Item.sku"]
)
def test_code_outside_the_vocabulary_is_refused_not_run(default: str) -> None:
    tools = TOOLS.replace("label: str = None", f"label: str = {default}")
    with pytest.raises(ToolSchemaError):
        toolkit_schemas({**SOURCES, "src/tau2/shop/tools.py": tools}, "tau2.shop.tools", "Shop")


def test_docstring_entries_continuations_and_typed_names() -> None:
    doc = parse_docstring(
        "\n    Do it.\n\n    Args:\n        a (int): First\n            and more.\n"
        "        b: Second.\n\n    Returns:\n        x: y\n    "
    )
    assert (doc.short, doc.long) == ("Do it.", None)
    assert [(p.name, p.description, p.type_name) for p in doc.params] == [
        ("a", "First\nand more.", "int"),
        ("b", "Second.", None),
    ]


@pytest.mark.parametrize("text", ["Do.\n\n:param a: x", "Do.\n\n@param a: x", "Do\n\nArgs\n----"])
def test_other_docstring_styles_are_refused(text: str) -> None:
    with pytest.raises(DocstringError):
        parse_docstring(text)
