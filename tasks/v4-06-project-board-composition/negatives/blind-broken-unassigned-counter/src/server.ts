// Tiny issue board over MCP (mcp-use v2). Tools mutate one in-memory board;
// resources render it afresh on every read.
import { MCPServer, type CallToolResult } from "mcp-use";
import { z } from "zod";

interface Issue {
  id: number;
  title: string;
  status: "open" | "resolved";
  assignee: string | null;
}

const board = new Map<number, Issue>();
let issuesCreated = 0;
// running count of open issues without an assignee, kept up to date by the tools
let unassignedOpen = 0;

const view = (issue: Issue): Issue => ({ ...issue });

function result(issue: Issue): CallToolResult {
  const value = view(issue);
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: { ...value } };
}

function notFound(id: number): CallToolResult {
  return { content: [{ type: "text", text: `issue ${id} not found` }], isError: true };
}

function summary() {
  const all = [...board.values()];
  return {
    total: issuesCreated,
    open: all.filter((i) => i.status === "open").length,
    resolved: all.filter((i) => i.status === "resolved").length,
    unassigned: unassignedOpen,
  };
}

const server = new MCPServer({ name: "project-board", version: "1.0.0" });

server.tool(
  {
    name: "create_issue",
    description: "Create a new open, unassigned issue.",
    inputSchema: z.object({ title: z.string() }),
  },
  async ({ title }) => {
    issuesCreated += 1;
    const issue: Issue = { id: issuesCreated, title, status: "open", assignee: null };
    board.set(issue.id, issue);
    unassignedOpen += 1;
    return result(issue);
  },
);

server.tool(
  {
    name: "assign_issue",
    description: "Assign an issue to someone (replaces any previous assignee; status unchanged).",
    inputSchema: z.object({ id: z.int(), assignee: z.string() }),
  },
  async ({ id, assignee }) => {
    const issue = board.get(id);
    if (!issue) return notFound(id);
    if (issue.assignee === null) unassignedOpen -= 1;
    issue.assignee = assignee;
    return result(issue);
  },
);

server.tool(
  {
    name: "resolve_issue",
    description: "Mark an issue resolved (resolving a resolved issue returns it unchanged).",
    inputSchema: z.object({ id: z.int() }),
  },
  async ({ id }) => {
    const issue = board.get(id);
    if (!issue) return notFound(id);
    if (issue.status === "open" && issue.assignee === null) unassignedOpen -= 1;
    issue.status = "resolved";
    return result(issue);
  },
);

server.resource(
  {
    name: "board-summary",
    uri: "board://summary",
    description: "Live issue counts.",
    mimeType: "application/json",
  },
  async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(summary()) }],
  }),
);

server.resourceTemplate(
  {
    name: "issue",
    uriTemplate: "issue://{id}",
    description: "The current state of one issue.",
    mimeType: "application/json",
  },
  async (uri, { id }) => {
    const raw = String(id);
    const issue = /^\d+$/.test(raw) ? board.get(Number(raw)) : undefined;
    if (!issue) throw new Error(`issue ${raw} not found`);
    return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(view(issue)) }] };
  },
);

await server.listen(Number(process.env.PORT), { host: "127.0.0.1" });
