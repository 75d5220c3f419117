// Alternate legitimate solution: the approval flow as a pure state machine, apart from the server wiring.
// The requestState is the plain name of the round just asked ("target" or "approval").
import { inputRequired, inputResponse, type CallToolResult, type InputRequiredResult, type InputResponses } from "mcp-use";

export interface Turn {
  service: string;
  environment: string;
  state: string | undefined;
  responses: InputResponses | Record<string, unknown> | undefined;
}

const done = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: false });

const targetQuestion = (t: Turn): InputRequiredResult =>
  inputRequired({
    inputRequests: {
      target: inputRequired.elicit({
        message: `Confirm target: ${t.service} in ${t.environment}`,
        requestedSchema: {
          type: "object",
          properties: { confirm: { type: "boolean", title: "Deploy to this target?" } },
          required: ["confirm"],
        },
      }),
    },
    requestState: "target",
  });

const approvalQuestion = (t: Turn): InputRequiredResult =>
  inputRequired({
    inputRequests: {
      approval: inputRequired.elicit({
        message: `Approve deployment of ${t.service} to ${t.environment}?`,
        requestedSchema: {
          type: "object",
          properties: { approver: { type: "string", title: "Approver", minLength: 1 } },
          required: ["approver"],
        },
      }),
    },
    requestState: "approval",
  });

export function step(t: Turn): CallToolResult | InputRequiredResult {
  const what = `${t.service} to ${t.environment}`;
  if (t.state === "approval") {
    const answer = inputResponse(t.responses, "approval");
    if (answer.kind !== "elicit") return approvalQuestion(t);
    const approver = answer.content?.approver;
    return answer.action === "accept" && typeof approver === "string"
      ? done(`Deployment of ${what} approved by ${approver}.`)
      : done(`Deployment of ${what} declined.`);
  }
  const answer = inputResponse(t.responses, "target");
  if (t.state !== "target" || answer.kind !== "elicit") return targetQuestion(t);
  if (answer.action === "accept" && answer.content?.confirm === true) return approvalQuestion(t);
  return done(`Deployment of ${what} cancelled.`);
}
