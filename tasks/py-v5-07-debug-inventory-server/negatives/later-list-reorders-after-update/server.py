"""Negative: stock updates re-insert the item, so the listing follows the last change, not the table."""

import os
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import StrictInt

mcp = MCPServer("inventory")

# sku -> item; the stock levels change as tools are called.
INVENTORY: dict[str, dict[str, Any]] = {
    "coffee-mug": {"sku": "coffee-mug", "name": "Coffee Mug", "stock": 8},
    "desk-lamp": {"sku": "desk-lamp", "name": "Desk Lamp", "stock": 2},
    "notebook": {"sku": "notebook", "name": "Notebook", "stock": 15},
}


def _item(sku: str) -> dict[str, Any]:
    item = INVENTORY.get(sku)
    if item is None:
        raise ToolError(f"item {sku} not found")
    return item


def _set_stock(sku: str, stock: int) -> None:
    # items are replaced, not mutated: the new record goes to the end of the dict
    item = INVENTORY.pop(sku)
    INVENTORY[sku] = {**item, "stock": stock}


def _check_quantity(quantity: int) -> None:
    if quantity < 1:
        raise ToolError(f"quantity must be at least 1 (got {quantity})")


@mcp.tool()
def list_inventory() -> dict[str, Any]:
    """List every item with its current stock."""
    return {"items": [dict(item) for item in INVENTORY.values()]}


@mcp.tool()
def get_stock(sku: str) -> dict[str, Any]:
    """Current stock of one item."""
    item = _item(sku)
    return {"sku": sku, "stock": item["stock"]}


@mcp.tool()
def reserve_stock(sku: str, quantity: StrictInt) -> dict[str, Any]:
    """Take `quantity` units of an item out of stock."""
    _check_quantity(quantity)
    item = _item(sku)
    if quantity > item["stock"]:
        raise ToolError(f"insufficient stock for {sku}: {item['stock']} left, {quantity} requested")
    _set_stock(sku, item["stock"] - quantity)
    return {"sku": sku, "reserved": quantity, "stock": INVENTORY[sku]["stock"]}


@mcp.tool()
def restock(sku: str, quantity: StrictInt) -> dict[str, Any]:
    """Add `quantity` units of an item to stock."""
    _check_quantity(quantity)
    item = _item(sku)
    _set_stock(sku, item["stock"] + quantity)
    return {"sku": sku, "restocked": quantity, "stock": INVENTORY[sku]["stock"]}


if __name__ == "__main__":
    port = int(os.environ["PORT"])
    mcp.run("streamable-http", host="127.0.0.1", port=port, streamable_http_path="/mcp")
