// Negative: binds list_incidents to the detail view and get_incident to the list view.
import { useToolContext } from "mcp-use/react";

type Incident = { id: string; title: string; severity: string; status: string; responders: string[] };

export default function IncidentDetail() {
  const view = useToolContext();
  const incident = view.status === "ready" ? (view.toolOutput as Incident) : undefined;
  return (
    <main>
      <h1>Incident detail</h1>
      {incident ? (
        <section>
          <h2>
            {incident.id}: {incident.title}
          </h2>
          <p>
            {incident.severity} · {incident.status}
          </p>
          <ul>
            {incident.responders.map((r) => (
              <li key={r}>{r}</li>
            ))}
          </ul>
        </section>
      ) : (
        <p>Unable to load incident.</p>
      )}
    </main>
  );
}
