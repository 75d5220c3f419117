import { useToolContext } from "mcp-use/react";

interface Row {
  id: string;
  title: string;
  severity: string;
  status: string;
}

function Placeholder() {
  return <p role="status">Unable to load incidents.</p>;
}

export default function IncidentListView() {
  const ctx = useToolContext();
  if (ctx.status !== "ready") {
    return (
      <article>
        <header>Incident list</header>
        <Placeholder />
      </article>
    );
  }
  const rows = ((ctx.toolOutput ?? {}) as { incidents?: Row[] }).incidents ?? [];
  return (
    <article>
      <header>Incident list</header>
      <ol>
        {rows.map((row) => (
          <li key={row.id}>
            <strong>{row.id}</strong> [{row.severity}/{row.status}] {row.title}
          </li>
        ))}
      </ol>
    </article>
  );
}
