// Negative: the status constants carry a typo, Resolved capitalized, so new issues are "open" but a resolved
// issue reads "Resolved".
import { MCPServer, type CallToolResult, type ReadResourceResult } from "mcp-use";
import { z } from "zod";

const Status = { Open: "open", Resolved: "Resolved" } as const;

interface Issue {
  id: number;
  title: string;
  status: (typeof Status)[keyof typeof Status];
  assignee: string | null;
}

// The one board, shared by every tool call and resource read for the life of the process.
const issues = new Map<number, Issue>();
let nextId = 1;

function ok(issue: Issue): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(issue) }], structuredContent: { ...issue } };
}

function notFound(id: number): CallToolResult {
  return { content: [{ type: "text", text: `issue ${id} not found` }], isError: true };
}

function json(uri: URL, value: object): ReadResourceResult {
  return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(value) }] };
}

const server = new MCPServer({ name: "project-board", version: "1.0.0" });
const id = z.number().int().describe("The issue id");

server.tool(
  {
    name: "create_issue",
    description: "Create a new open, unassigned issue and return it.",
    inputSchema: z.object({ title: z.string().describe("The issue title") }),
  },
  async ({ title }) => {
    const issue: Issue = { id: nextId++, title, status: Status.Open, assignee: null };
    issues.set(issue.id, issue);
    return ok(issue);
  },
);

server.tool(
  {
    name: "assign_issue",
    description: "Assign an issue to someone, replacing any previous assignee.",
    inputSchema: z.object({ id, assignee: z.string().describe("Who the issue is assigned to") }),
  },
  async ({ id, assignee }) => {
    const issue = issues.get(id);
    if (!issue) return notFound(id);
    issue.assignee = assignee;
    return ok(issue);
  },
);

server.tool(
  {
    name: "resolve_issue",
    description: "Mark an issue resolved.",
    inputSchema: z.object({ id }),
  },
  async ({ id }) => {
    const issue = issues.get(id);
    if (!issue) return notFound(id);
    issue.status = Status.Resolved;
    return ok(issue);
  },
);

server.resource(
  {
    name: "board-summary",
    uri: "board://summary",
    description: "Issue counts, computed from the board on every read",
    mimeType: "application/json",
  },
  async (uri) => {
    const all = [...issues.values()];
    const open = all.filter((i) => i.status === Status.Open);
    return json(uri, {
      total: all.length,
      open: open.length,
      resolved: all.filter((i) => i.status === Status.Resolved).length,
      unassigned: open.filter((i) => i.assignee === null).length,
    });
  },
);

server.resourceTemplate(
  {
    name: "issue",
    uriTemplate: "issue://{id}",
    description: "One issue as JSON",
    mimeType: "application/json",
  },
  async (uri, params) => {
    const raw = String(params.id);
    const issue = /^\d+$/.test(raw) ? issues.get(Number(raw)) : undefined;
    if (!issue) throw new Error(`issue ${raw} not found`);
    return json(uri, issue);
  },
);

await server.listen(Number(process.env.PORT));
