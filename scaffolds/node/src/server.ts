// Starter template: an MCP server with mcp-use on Streamable HTTP at /mcp, on the port in $PORT.
import { MCPServer } from "mcp-use";
import { z } from "zod";

const server = new MCPServer({ name: "my-mcp-server", version: "0.1.0" });

server.tool(
  {
    name: "ping",
    description: "Replace this example tool with the ones your task asks for.",
    inputSchema: z.object({}),
  },
  async () => ({ content: [{ type: "text", text: "pong" }] }),
);

await server.listen(Number(process.env.PORT));
