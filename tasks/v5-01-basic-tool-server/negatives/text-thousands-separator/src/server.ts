// Negative: formats the sum for people (toLocaleString): right while it is below 1000, "5,555" after.
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
  async ({ a, b }) => ({
    content: [{ type: "text", text: (a + b).toLocaleString("en-US") }],
    structuredContent: { result: a + b },
  }),
);

await server.listen(Number(process.env.PORT));
