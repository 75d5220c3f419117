// Negative: keeps each flow's round in server memory, keyed by its target (service, environment); requestState is
// a constant. One flow at a time works; two flows for one target at once, or a client retry, mix up the round.
import { MCPServer, inputRequired, inputResponse, type CallToolResult } from "mcp-use";
import { z } from "zod";

const server = new MCPServer({ name: "deploy-approval", version: "1.0.0" });

type Step = "confirm" | "approve";
const pending = new Map<string, Step>(); // `${service}\u0000${environment}` -> the round asked last

function final(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: false };
}

function ask(key: string, step: Step, message: string) {
  pending.set(key, step);
  const requestedSchema =
    step === "confirm"
      ? { type: "object" as const, properties: { confirm: { type: "boolean" as const } }, required: ["confirm"] }
      : { type: "object" as const, properties: { approver: { type: "string" as const } }, required: ["approver"] };
  return inputRequired({
    inputRequests: { question: inputRequired.elicit({ message, requestedSchema }) },
    requestState: "pending",
  });
}

server.tool(
  {
    name: "request_deploy",
    description: "Deploy a service after the user confirms the target and approves the deployment.",
    inputSchema: z.object({ service: z.string(), environment: z.string() }),
  },
  async ({ service, environment }, ctx) => {
    const key = `${service}\u0000${environment}`;
    const target = `${service} to ${environment}`;
    const step = ctx.requestState<string>() ? pending.get(key) : undefined;
    pending.delete(key);
    const answer = inputResponse(ctx.inputResponses, "question");
    if (step === undefined || answer.kind !== "elicit") {
      return ask(key, "confirm", `Confirm target: ${service} in ${environment}`);
    }
    if (step === "confirm") {
      if (answer.action !== "accept" || answer.content?.confirm !== true) {
        return final(`Deployment of ${target} cancelled.`);
      }
      return ask(key, "approve", `Approve deployment of ${target}?`);
    }
    if (answer.action === "accept") {
      return final(`Deployment of ${target} approved by ${String(answer.content?.approver ?? "")}.`);
    }
    return final(`Deployment of ${target} declined.`);
  },
);

await server.listen(Number(process.env.PORT));
