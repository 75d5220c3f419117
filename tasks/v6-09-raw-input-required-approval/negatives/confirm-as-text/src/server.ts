// Negative: round 1 asks for confirm as a "yes"/"no" string instead of a boolean.
import { MCPServer, inputRequired, inputResponse, type CallToolResult } from "mcp-use";
import { z } from "zod";

const server = new MCPServer({ name: "deploy-approval", version: "1.0.0" });

type Step = "confirm" | "approve";

function final(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: false };
}

// Round 1 asks for a boolean `confirm`, round 2 for a string `approver`; the state names the round asked.
function askConfirm(service: string, environment: string) {
  return inputRequired({
    inputRequests: {
      confirm: inputRequired.elicit({
        message: `Confirm target: ${service} in ${environment}`,
        requestedSchema: { type: "object", properties: { confirm: { type: "string", enum: ["yes", "no"] } }, required: ["confirm"] },
      }),
    },
    requestState: JSON.stringify({ step: "confirm" }),
  });
}

function askApproval(service: string, environment: string) {
  return inputRequired({
    inputRequests: {
      approve: inputRequired.elicit({
        message: `Approve deployment of ${service} to ${environment}?`,
        requestedSchema: { type: "object", properties: { approver: { type: "string" } }, required: ["approver"] },
      }),
    },
    requestState: JSON.stringify({ step: "approve" }),
  });
}

function stepOf(state: string | undefined): Step {
  try {
    return state && JSON.parse(state).step === "approve" ? "approve" : "confirm";
  } catch {
    return "confirm";
  }
}

server.tool(
  {
    name: "request_deploy",
    description: "Deploy a service after the user confirms the target and approves the deployment.",
    inputSchema: z.object({
      service: z.string().describe("The service to deploy, e.g. checkout"),
      environment: z.string().describe("The target environment, e.g. production"),
    }),
  },
  async ({ service, environment }, ctx) => {
    const target = `${service} to ${environment}`;
    const step = stepOf(ctx.requestState<string>());

    if (step === "confirm") {
      const answer = inputResponse(ctx.inputResponses, "confirm");
      if (answer.kind !== "elicit") {
        return askConfirm(service, environment);
      }
      if (answer.action !== "accept" || !["yes", true].includes(answer.content?.confirm as string | boolean)) {
        return final(`Deployment of ${target} cancelled.`);
      }
      return askApproval(service, environment);
    }

    const answer = inputResponse(ctx.inputResponses, "approve");
    if (answer.kind !== "elicit") {
      return askApproval(service, environment);
    }
    if (answer.action === "accept") {
      return final(`Deployment of ${target} approved by ${String(answer.content?.approver ?? "")}.`);
    }
    return final(`Deployment of ${target} declined.`);
  },
);

await server.listen(Number(process.env.PORT));
