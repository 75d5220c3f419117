// Alternate legitimate solution: root index.ts entry; the flow lives in lib/flow.ts.
import { MCPServer } from "mcp-use";
import { z } from "zod";
import { step } from "./lib/flow.js";

const port = Number.parseInt(process.env.PORT ?? "", 10);
if (!Number.isInteger(port)) throw new Error("PORT must be set");

const server = new MCPServer({ name: "deploy-approval", version: "1.0.0" });

server.tool(
  {
    name: "request_deploy",
    description: "Deploy a service once the user has confirmed the target and approved it (two input rounds).",
    inputSchema: z.object({
      service: z.string().min(1),
      environment: z.string().min(1),
    }),
  },
  ({ service, environment }, ctx) =>
    step({ service, environment, state: ctx.requestState<string>(), responses: ctx.inputResponses }),
);

await server.listen(port);
