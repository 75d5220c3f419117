import { useToolContext } from "mcp-use/react";

type Detail = { id: string; title: string; severity: string; status: string; responders: string[] };

export default function IncidentDetail() {
  const { status, toolOutput } = useToolContext();
  const incident = toolOutput as Detail | undefined;

  return (
    <main style={{ fontFamily: "system-ui, sans-serif", padding: 16 }}>
      <h1>Incident detail</h1>
      {status !== "ready" || !incident ? (
        <p>Unable to load incident.</p>
      ) : (
        <section>
          <h2>
            {incident.id}: {incident.title}
          </h2>
          <p>
            Severity {incident.severity}, status {incident.status}
          </p>
          <ul>
            {incident.responders.map((name) => (
              <li key={name}>{name}</li>
            ))}
          </ul>
        </section>
      )}
    </main>
  );
}
