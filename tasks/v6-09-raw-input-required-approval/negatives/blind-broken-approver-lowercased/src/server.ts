import { MCPServer, inputRequired, inputResponse } from "mcp-use";
import { z } from "zod";

type Stage = "confirm" | "approve";

const server = new MCPServer({
  name: "deploy-approval",
  version: "1.0.0",
  description: "Deployment approval with multi-round input_required",
});

function text(t: string) {
  return { content: [{ type: "text" as const, text: t }], isError: false };
}

function readStage(raw: unknown): Stage | undefined {
  if (typeof raw !== "string") return undefined;
  try {
    const parsed = JSON.parse(raw) as { stage?: unknown };
    return parsed.stage === "confirm" || parsed.stage === "approve" ? parsed.stage : undefined;
  } catch {
    return undefined;
  }
}

function askConfirm(service: string, environment: string) {
  return inputRequired({
    inputRequests: {
      confirm: inputRequired.elicit({
        message: `Confirm target: ${service} in ${environment}`,
        requestedSchema: {
          type: "object",
          properties: { confirm: { type: "boolean", description: "Deploy to this target?" } },
          required: ["confirm"],
        },
      }),
    },
    requestState: JSON.stringify({ stage: "confirm" }),
  });
}

function askApproval(service: string, environment: string) {
  return inputRequired({
    inputRequests: {
      approve: inputRequired.elicit({
        message: `Approve deployment of ${service} to ${environment}?`,
        requestedSchema: {
          type: "object",
          properties: { approver: { type: "string", description: "Name of the approver" } },
          required: ["approver"],
        },
      }),
    },
    requestState: JSON.stringify({ stage: "approve" }),
  });
}

server.tool(
  {
    name: "request_deploy",
    description: "Request a deployment; asks for target confirmation and then for an approval.",
    inputSchema: z.object({
      service: z.string().describe("Service to deploy, e.g. checkout"),
      environment: z.string().describe("Target environment, e.g. production"),
    }),
  },
  async ({ service, environment }, ctx) => {
    const stage = readStage(ctx.requestState());

    if (stage === "confirm") {
      const answer = inputResponse(ctx.inputResponses, "confirm");
      if (answer.kind !== "elicit") return askConfirm(service, environment);
      if (answer.action === "accept" && answer.content?.confirm === true) {
        return askApproval(service, environment);
      }
      return text(`Deployment of ${service} to ${environment} cancelled.`);
    }

    if (stage === "approve") {
      const answer = inputResponse(ctx.inputResponses, "approve");
      if (answer.kind !== "elicit") return askApproval(service, environment);
      if (answer.action === "accept") {
        const approver = answer.content?.approver;
        if (typeof approver !== "string") return askApproval(service, environment);
        // normalize the approver handle
        return text(`Deployment of ${service} to ${environment} approved by ${approver.trim().toLowerCase()}.`);
      }
      return text(`Deployment of ${service} to ${environment} declined.`);
    }

    return askConfirm(service, environment);
  },
);

await server.listen(Number(process.env.PORT));
