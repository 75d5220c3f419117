// Alternate legitimate solution: the list view, one line per incident.
import { useToolContext } from "mcp-use/react";
import { Layout } from "../shared/Layout";

type Row = { id: string; title: string; severity: string; status: string };

export default function IncidentListView() {
  const ctx = useToolContext();
  const rows = ctx.status === "ready" ? (ctx.toolOutput as { incidents: Row[] }).incidents : null;
  return (
    <Layout heading="Incident list" placeholder="Unable to load incidents.">
      {rows && (
        <ol>
          {rows.map((row) => (
            <li key={row.id}>
              <b>{row.id}</b> {row.title} ({row.severity}, {row.status})
            </li>
          ))}
        </ol>
      )}
    </Layout>
  );
}
