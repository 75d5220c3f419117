"""Inventory MCP server (rewritten): an Inventory class behind four MCPServer tools.

Quantities are validated by pydantic in strict mode (JSON integers only, at
least 1); every mutation happens under one asyncio lock so a check and its
update are atomic.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, Field

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

Quantity = Annotated[int, Field(strict=True, ge=1, description="number of units, at least 1")]


@dataclass
class Item:
    sku: str
    name: str
    stock: int


class ItemView(BaseModel):
    sku: str
    name: str
    stock: int


class InventoryList(BaseModel):
    items: list[ItemView]


class StockLevel(BaseModel):
    sku: str
    stock: int


class Reservation(BaseModel):
    sku: str
    reserved: int
    stock: int


class Restock(BaseModel):
    sku: str
    restocked: int
    stock: int


class Inventory:
    def __init__(self, items: list[Item]) -> None:
        self._items = {item.sku: item for item in items}  # dicts keep the table order
        self.lock = asyncio.Lock()

    def find(self, sku: str) -> Item:
        item = self._items.get(sku)
        if item is None:
            raise ToolError(f"item {sku} not found")
        return item

    def all(self) -> list[Item]:
        return list(self._items.values())


inventory = Inventory(
    [
        Item("coffee-mug", "Coffee Mug", 8),
        Item("desk-lamp", "Desk Lamp", 2),
        Item("notebook", "Notebook", 15),
    ]
)

mcp = MCPServer("inventory")


@mcp.tool()
async def list_inventory() -> InventoryList:
    """List every item with its current stock."""
    async with inventory.lock:
        return InventoryList(items=[ItemView(sku=i.sku, name=i.name, stock=i.stock) for i in inventory.all()])


@mcp.tool()
async def get_stock(sku: str) -> StockLevel:
    """Current stock of one item."""
    async with inventory.lock:
        item = inventory.find(sku)
        return StockLevel(sku=item.sku, stock=item.stock)


@mcp.tool()
async def reserve_stock(sku: str, quantity: Quantity) -> Reservation:
    """Take `quantity` units of an item out of stock (all of it at most)."""
    async with inventory.lock:
        item = inventory.find(sku)
        if quantity > item.stock:
            raise ToolError(f"insufficient stock for {sku}: {item.stock} available, {quantity} requested")
        item.stock -= quantity
        return Reservation(sku=item.sku, reserved=quantity, stock=item.stock)


@mcp.tool()
async def restock(sku: str, quantity: Quantity) -> Restock:
    """Add `quantity` units of an item to stock."""
    async with inventory.lock:
        item = inventory.find(sku)
        item.stock += quantity
        return Restock(sku=item.sku, restocked=quantity, stock=item.stock)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
