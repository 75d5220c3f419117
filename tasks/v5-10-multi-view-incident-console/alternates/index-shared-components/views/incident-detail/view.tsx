// Alternate legitimate solution: the detail view, the incident and its responders.
import { useToolContext } from "mcp-use/react";
import { Layout } from "../shared/Layout";

type Detail = { id: string; title: string; severity: string; status: string; responders: string[] };

export default function IncidentDetailView() {
  const ctx = useToolContext();
  const incident = ctx.status === "ready" ? (ctx.toolOutput as Detail) : null;
  return (
    <Layout heading="Incident detail" placeholder="Unable to load incident.">
      {incident && (
        <dl>
          <dt>{incident.id}</dt>
          <dd>{incident.title}</dd>
          <dd>
            {incident.severity} / {incident.status}
          </dd>
          <dd>Responders: {incident.responders.join(", ")}</dd>
        </dl>
      )}
    </Layout>
  );
}
