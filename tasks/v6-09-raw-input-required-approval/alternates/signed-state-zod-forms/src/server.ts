// Alternate legitimate solution: the questions' requestedSchema are zod objects (converted by inputRequired.elicit),
// the answers are read with the schema-aware acceptedContent, and the requestState is HMAC-signed with the SDK's
// createRequestStateCodec (verified by the server before the callback runs; ctx.requestState() is the payload).
import { randomBytes } from "node:crypto";
import { MCPServer, acceptedContent, createRequestStateCodec, inputRequired } from "mcp-use";
import { z } from "zod";

type Flow = { round: 1 | 2 };

const codec = createRequestStateCodec<Flow>({ key: randomBytes(32), ttlSeconds: 300 });
const server = new MCPServer({ name: "deploy-approval", version: "1.0.0", requestState: { verify: codec.verify } });

const ConfirmForm = z.object({ confirm: z.boolean().describe("Deploy to this target?") });
const ApproveForm = z.object({ approver: z.string().describe("Who approves this deployment") });
const KEY = "answer";

const say = (text: string) => ({ content: [{ type: "text" as const, text }] });

async function ask(round: Flow["round"], message: string) {
  return inputRequired({
    inputRequests: {
      [KEY]: inputRequired.elicit({ message, requestedSchema: round === 1 ? ConfirmForm : ApproveForm }),
    },
    requestState: await codec.mint({ round }),
  });
}

server.tool(
  {
    name: "request_deploy",
    description: "Ask the user to confirm the target, then to approve, then deploy.",
    inputSchema: z.object({ service: z.string(), environment: z.string() }),
  },
  async ({ service, environment }, ctx) => {
    const flow = ctx.requestState<Flow>();
    const answered = ctx.inputResponses?.[KEY] !== undefined;
    const target = `${service} to ${environment}`;

    if (!flow || !answered) {
      return flow?.round === 2
        ? ask(2, `Approve deployment of ${target}?`)
        : ask(1, `Confirm target: ${service} in ${environment}`);
    }
    if (flow.round === 1) {
      const form = acceptedContent(ctx.inputResponses, KEY, ConfirmForm);
      if (form?.confirm !== true) return say(`Deployment of ${target} cancelled.`);
      return ask(2, `Approve deployment of ${target}?`);
    }
    const form = acceptedContent(ctx.inputResponses, KEY, ApproveForm);
    return form ? say(`Deployment of ${target} approved by ${form.approver}.`) : say(`Deployment of ${target} declined.`);
  },
);

await server.listen(Number(process.env.PORT));
