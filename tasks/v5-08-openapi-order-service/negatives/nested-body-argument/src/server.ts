// Negative: the whole server is MCPServer.fromOpenAPI over openapi.json, so createOrder and cancelOrder take their request body as one nested `body` argument instead of the top-level arguments customer, items and reason.
import { readFileSync } from "node:fs";
import { MCPServer, type OpenAPIDocument } from "mcp-use";

const spec = JSON.parse(readFileSync("openapi.json", "utf8")) as OpenAPIDocument;
const server = MCPServer.fromOpenAPI({ spec, baseUrl: process.env.ORDERS_API_URL, name: "order-service" });

await server.listen(Number(process.env.PORT));
