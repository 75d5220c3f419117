// Negative: subtracts instead of adding.
import { MCPServer } from "mcp-use";
import { z } from "zod";

const server = new MCPServer({ name: "basic-tool-server", version: "1.0.0" });

server.tool(
  {
    name: "add",
    description: "Add two integers and return their sum.",
    inputSchema: z.object({
      a: z.number().int().describe("The first integer"),
      b: z.number().int().describe("The second integer"),
    }),
  },
  async ({ a, b }) => ({ content: [{ type: "text", text: String(a - b) }] }),
);

await server.listen(Number(process.env.PORT));
