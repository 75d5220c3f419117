// Alternate legitimate solution: the board as a class; the server module only adapts it to MCP.
export type Status = "open" | "resolved";

export interface Issue {
  id: number;
  title: string;
  status: Status;
  assignee: string | null;
}

export class IssueNotFound extends Error {
  constructor(id: number | string) {
    super(`issue ${id} not found`);
  }
}

export class Board {
  readonly #issues: Issue[] = [];

  create(title: string): Issue {
    const issue: Issue = { id: this.#issues.length + 1, title, status: "open", assignee: null };
    this.#issues.push(issue);
    return { ...issue };
  }

  get(id: number): Issue {
    const issue = this.#issues.find((i) => i.id === id);
    if (!issue) throw new IssueNotFound(id);
    return issue;
  }

  assign(id: number, assignee: string): Issue {
    const issue = this.get(id);
    issue.assignee = assignee;
    return { ...issue };
  }

  resolve(id: number): Issue {
    const issue = this.get(id);
    issue.status = "resolved";
    return { ...issue };
  }

  summary(): { total: number; open: number; resolved: number; unassigned: number } {
    const count = (keep: (i: Issue) => boolean) => this.#issues.filter(keep).length;
    return {
      total: this.#issues.length,
      open: count((i) => i.status === "open"),
      resolved: count((i) => i.status === "resolved"),
      unassigned: count((i) => i.status === "open" && i.assignee === null),
    };
  }
}
