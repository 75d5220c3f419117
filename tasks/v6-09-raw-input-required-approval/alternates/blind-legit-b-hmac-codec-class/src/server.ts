import { randomBytes } from "node:crypto";
import {
  MCPServer,
  acceptedContent,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  type CallToolResult,
  type InputRequiredResult,
} from "mcp-use";
import { z } from "zod";

/** What travels between rounds inside the (HMAC-sealed) requestState. */
interface FlowState {
  step: "target" | "approval";
  service: string;
  environment: string;
}

const codec = createRequestStateCodec<FlowState>({
  key: process.env.REQUEST_STATE_KEY ?? randomBytes(32).toString("hex"),
  ttlSeconds: 900,
});

const ConfirmAnswer = z.object({ confirm: z.boolean() });
const ApproverAnswer = z.object({ approver: z.string() });

class DeployApprovalFlow {
  constructor(
    private readonly service: string,
    private readonly environment: string,
  ) {}

  private get target() {
    return `${this.service} to ${this.environment}`;
  }

  private done(sentence: string): CallToolResult {
    return { content: [{ type: "text", text: sentence }], isError: false };
  }

  async askTarget(): Promise<InputRequiredResult> {
    return inputRequired({
      inputRequests: {
        target: inputRequired.elicit({
          message: `Confirm target: ${this.service} in ${this.environment}`,
          requestedSchema: {
            type: "object",
            properties: { confirm: { type: "boolean", title: "Confirm target" } },
            required: ["confirm"],
          },
        }),
      },
      requestState: await codec.mint({ step: "target", service: this.service, environment: this.environment }),
    });
  }

  async askApproval(): Promise<InputRequiredResult> {
    return inputRequired({
      inputRequests: {
        approval: inputRequired.elicit({
          message: `Approve deployment of ${this.target}?`,
          requestedSchema: {
            type: "object",
            properties: { approver: { type: "string", title: "Approver" } },
            required: ["approver"],
          },
        }),
      },
      requestState: await codec.mint({ step: "approval", service: this.service, environment: this.environment }),
    });
  }

  async onTarget(responses: unknown): Promise<CallToolResult | InputRequiredResult> {
    const view = inputResponse(responses as Record<string, unknown>, "target");
    if (view.kind !== "elicit") return this.askTarget();
    if (view.action !== "accept") return this.done(`Deployment of ${this.target} cancelled.`);
    const answer = acceptedContent(responses as Record<string, unknown>, "target", ConfirmAnswer);
    if (!answer) return this.askTarget();
    return answer.confirm ? this.askApproval() : this.done(`Deployment of ${this.target} cancelled.`);
  }

  async onApproval(responses: unknown): Promise<CallToolResult | InputRequiredResult> {
    const view = inputResponse(responses as Record<string, unknown>, "approval");
    if (view.kind !== "elicit") return this.askApproval();
    if (view.action !== "accept") return this.done(`Deployment of ${this.target} declined.`);
    const answer = acceptedContent(responses as Record<string, unknown>, "approval", ApproverAnswer);
    if (!answer) return this.askApproval();
    return this.done(`Deployment of ${this.target} approved by ${answer.approver}.`);
  }
}

const server = new MCPServer({
  name: "deploy-approval-codec",
  version: "1.0.0",
  requestState: { verify: codec.verify },
});

server.tool(
  {
    name: "request_deploy",
    title: "Request deployment",
    description: "Two-round deployment request: confirm the target, then approve.",
    inputSchema: z.object({ service: z.string(), environment: z.string() }),
  },
  async ({ service, environment }, ctx) => {
    const flow = new DeployApprovalFlow(service, environment);
    const state = ctx.requestState<FlowState>();
    if (!state || typeof state !== "object") return flow.askTarget();
    return state.step === "approval" ? flow.onApproval(ctx.inputResponses) : flow.onTarget(ctx.inputResponses);
  },
);

const port = Number.parseInt(process.env.PORT ?? "", 10);
await server.listen(port, { host: "127.0.0.1" });
