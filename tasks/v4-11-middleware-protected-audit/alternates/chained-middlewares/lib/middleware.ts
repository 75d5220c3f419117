// Alternate legitimate solution: two chained mcp:tools/call middlewares sharing ctx.state: the audit (registered first) reserves its line on arrival and fills in the decision the approval gate leaves in ctx.state.
import type { McpExactMiddlewareFn } from "mcp-use";

export class AuditTrail {
  readonly lines: string[] = [];

  middleware(): McpExactMiddlewareFn<"tools/call"> {
    return async (ctx, next) => {
      const position = this.lines.push(`${this.lines.length + 1}|${ctx.params.name}|allowed`);
      const result = await next();
      const decision = ctx.state.get("approval") === "denied" ? "denied" : "allowed";
      this.lines[position - 1] = `${position}|${ctx.params.name}|${decision}`;
      return result;
    };
  }

  text(): string {
    return this.lines.join("\n");
  }
}

export function approvalGate(code: string, protectedTools: string[]): McpExactMiddlewareFn<"tools/call"> {
  return async (ctx, next) => {
    if (!protectedTools.includes(ctx.params.name)) return next();
    const given = (ctx.params.arguments ?? {})["approvalCode"];
    if (given !== code) {
      ctx.state.set("approval", "denied");
      return { isError: true, content: [{ type: "text", text: `approval required to call ${ctx.params.name}` }] };
    }
    return next();
  };
}
