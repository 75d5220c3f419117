// Negative: keeps the round in server memory under a one-time token: requestState carries only a uuid, forgotten when
// the retry arrives. Flows never mix, but a client retry (the same answers sent again with the same requestState)
// finds the token gone and is asked round 1 again.
import { randomUUID } from "node:crypto";
import { MCPServer, inputRequired, inputResponse, type CallToolResult } from "mcp-use";
import { z } from "zod";

const server = new MCPServer({ name: "deploy-approval", version: "1.0.0" });

type Step = "confirm" | "approve";
const steps = new Map<string, Step>(); // token -> the round its flow asked

function final(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: false };
}

function ask(step: Step, message: string) {
  const token = randomUUID();
  steps.set(token, step);
  const requestedSchema =
    step === "confirm"
      ? { type: "object" as const, properties: { confirm: { type: "boolean" as const } }, required: ["confirm"] }
      : { type: "object" as const, properties: { approver: { type: "string" as const } }, required: ["approver"] };
  return inputRequired({
    inputRequests: { question: inputRequired.elicit({ message, requestedSchema }) },
    requestState: token,
  });
}

server.tool(
  {
    name: "request_deploy",
    description: "Deploy a service after the user confirms the target and approves the deployment.",
    inputSchema: z.object({ service: z.string(), environment: z.string() }),
  },
  async ({ service, environment }, ctx) => {
    const target = `${service} to ${environment}`;
    const token = ctx.requestState<string>();
    const step = token ? steps.get(token) : undefined;
    if (token) steps.delete(token);
    const answer = inputResponse(ctx.inputResponses, "question");
    if (step === undefined || answer.kind !== "elicit") {
      return ask("confirm", `Confirm target: ${service} in ${environment}`);
    }
    if (step === "confirm") {
      if (answer.action !== "accept" || answer.content?.confirm !== true) {
        return final(`Deployment of ${target} cancelled.`);
      }
      return ask("approve", `Approve deployment of ${target}?`);
    }
    if (answer.action === "accept") {
      return final(`Deployment of ${target} approved by ${String(answer.content?.approver ?? "")}.`);
    }
    return final(`Deployment of ${target} declined.`);
  },
);

await server.listen(Number(process.env.PORT));
