// Basic MCP tool server: one typed `add` tool over Streamable HTTP (mcp-use v2).
import { MCPServer } from "mcp-use";
import { z } from "zod";

const server = new MCPServer({ name: "add-server", version: "1.0.0" });

server.tool(
  {
    name: "add",
    description: "Add two integers and return their sum.",
    // z.int() advertises {"type": "integer"} and rejects strings and fractions
    // before the callback runs (the client receives an isError result).
    inputSchema: z.object({
      a: z.int().describe("First addend"),
      // clients sometimes send the second operand as a string; accept "5" as 5
      b: z.coerce.number().int().describe("Second addend"),
    }),
    outputSchema: z.object({ result: z.int() }),
    annotations: { readOnlyHint: true, idempotentHint: true },
  },
  async ({ a, b }) => {
    const sum = a + b;
    return {
      content: [{ type: "text", text: String(sum) }],
      structuredContent: { result: sum },
    };
  },
);

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) {
  throw new Error("PORT environment variable must be set to a port number");
}
await server.listen(port, { host: "127.0.0.1" });
