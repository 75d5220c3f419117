import { useToolContext } from "mcp-use/react";

interface Detail {
  id: string;
  title: string;
  severity: string;
  status: string;
  responders: string[];
}

export default function IncidentDetailView() {
  const ctx = useToolContext();
  const detail = ctx.status === "ready" ? (ctx.toolOutput as Detail | undefined) : undefined;
  return (
    <article>
      <header>Incident detail</header>
      {detail ? (
        <dl>
          <dt>{detail.id}</dt>
          <dd>{detail.title}</dd>
          <dd>
            {detail.severity} / {detail.status}
          </dd>
          <dd>Responders: {detail.responders.join(", ")}</dd>
        </dl>
      ) : (
        <p role="status">Unable to load incident.</p>
      )}
    </article>
  );
}
