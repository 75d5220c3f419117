"""Alternate legitimate repair: the server rewritten around a Stock class, tools returning JSON text,
explicit Field constraints on quantity (strict: "3" is refused), listening on 0.0.0.0."""

import json
import os
from typing import Annotated

from pydantic import Field

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

Quantity = Annotated[int, Field(description="Number of units", strict=True)]


class Stock:
    def __init__(self) -> None:
        self.items = [
            {"sku": "coffee-mug", "name": "Coffee Mug", "stock": 8},
            {"sku": "desk-lamp", "name": "Desk Lamp", "stock": 2},
            {"sku": "notebook", "name": "Notebook", "stock": 15},
        ]

    def find(self, sku: str) -> dict:
        for item in self.items:
            if item["sku"] == sku:
                return item
        raise ToolError(f"Unknown SKU {sku!r}: not found in inventory")


stock = Stock()
server = MCPServer("inventory-fixed")


def _positive(quantity: int) -> None:
    if quantity < 1:
        raise ToolError("Quantity must be a positive integer")


@server.tool(name="list_inventory")
def list_inventory() -> str:
    return json.dumps({"items": stock.items})


@server.tool(name="get_stock")
def get_stock(sku: str) -> str:
    return json.dumps({"sku": sku, "stock": stock.find(sku)["stock"]})


@server.tool(name="reserve_stock")
def reserve_stock(sku: str, quantity: Quantity) -> str:
    _positive(quantity)
    item = stock.find(sku)
    if item["stock"] < quantity:
        raise ToolError(f"Insufficient stock: only {item['stock']} of {sku} available")
    item["stock"] = item["stock"] - quantity
    return json.dumps({"sku": sku, "reserved": quantity, "stock": item["stock"]})


@server.tool(name="restock")
def restock(sku: str, quantity: Quantity) -> str:
    _positive(quantity)
    item = stock.find(sku)
    item["stock"] = item["stock"] + quantity
    return json.dumps({"sku": sku, "restocked": quantity, "stock": item["stock"]})


if __name__ == "__main__":
    server.run("streamable-http", host="0.0.0.0", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
