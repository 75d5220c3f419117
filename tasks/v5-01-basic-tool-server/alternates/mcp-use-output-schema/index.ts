// Alternate legitimate solution: mcp-use with an outputSchema, structured content {result} beside the text,
// entry index.ts at the workspace root, PORT read by listen() itself.
import { MCPServer } from "mcp-use";
import { z } from "zod";
import { add } from "./lib/arith.js";

const server = new MCPServer({ name: "basic-tool-server", version: "2.0.0" });

server.tool(
  {
    name: "add",
    title: "Add two integers",
    inputSchema: z.object({ a: z.int(), b: z.int() }),
    outputSchema: z.object({ result: z.int() }),
    annotations: { readOnlyHint: true },
  },
  async ({ a, b }) => {
    const result = add(a, b);
    return { content: [{ type: "text", text: String(result) }], structuredContent: { result } };
  },
);

await server.listen();
