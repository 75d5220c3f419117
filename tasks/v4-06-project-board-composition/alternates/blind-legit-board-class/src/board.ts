export type IssueStatus = "open" | "resolved";

export interface Issue {
  id: number;
  title: string;
  status: IssueStatus;
  assignee: string | null;
}

export interface BoardSummary {
  total: number;
  open: number;
  resolved: number;
  unassigned: number;
}

export class IssueNotFoundError extends Error {
  constructor(id: number | string) {
    super(`issue ${id} not found`);
    this.name = "IssueNotFoundError";
  }
}

/** The single shared board. Every accessor returns fresh copies computed from current state. */
export class Board {
  readonly #issues: Issue[] = [];

  create(title: string): Issue {
    const issue: Issue = { id: this.#issues.length + 1, title, status: "open", assignee: null };
    this.#issues.push(issue); // issues are never removed, so length + 1 never repeats an id
    return { ...issue };
  }

  assign(id: number, assignee: string): Issue {
    const issue = this.#find(id);
    issue.assignee = assignee;
    return { ...issue };
  }

  resolve(id: number): Issue {
    const issue = this.#find(id);
    if (issue.status === "resolved") throw new Error(`issue ${id} is already resolved`);
    issue.status = "resolved";
    return { ...issue };
  }

  get(id: number): Issue {
    return { ...this.#find(id) };
  }

  summary(): BoardSummary {
    const s: BoardSummary = { total: this.#issues.length, open: 0, resolved: 0, unassigned: 0 };
    for (const issue of this.#issues) {
      if (issue.status === "resolved") {
        s.resolved++;
      } else {
        s.open++;
        if (issue.assignee === null) s.unassigned++;
      }
    }
    return s;
  }

  #find(id: number): Issue {
    const issue = this.#issues.find((i) => i.id === id);
    if (!issue) throw new IssueNotFoundError(id);
    return issue;
  }
}
