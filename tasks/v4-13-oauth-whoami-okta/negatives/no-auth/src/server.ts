// Negative: no authentication at all; whoami reports a caller nobody authenticated.
import { MCPServer } from "mcp-use";

const server = new MCPServer({ name: "oauth-whoami-okta", version: "1.0.0" });

server.tool(
  { name: "whoami", description: "The signed-in user (nobody signs in: there is no auth)." },
  async () => ({ content: [{ type: "text", text: JSON.stringify({ id: null, email: null, name: null }) }] }),
);

await server.listen(Number(process.env.PORT));
