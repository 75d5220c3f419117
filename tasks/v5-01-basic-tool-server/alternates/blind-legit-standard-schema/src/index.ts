import { MCPServer, type CallToolResult } from "mcp-use";
import { integerObject } from "./schema.js";

const server = new MCPServer({ name: "add-server", version: "1.0.0" });

server.tool(
  {
    name: "add",
    description: "Return a + b for two integers.",
    inputSchema: integerObject({ a: "First integer", b: "Second integer" }),
  },
  ({ a, b }): CallToolResult => ({ content: [{ type: "text", text: JSON.stringify(a + b) }] }),
);

// listen() with no port argument binds to process.env.PORT (host 127.0.0.1).
if (!process.env.PORT) throw new Error("PORT is not set");
const { url } = await server.listen();
console.log(`add server listening at ${url}`);
