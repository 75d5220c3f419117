import { useToolContext } from "mcp-use/react";

type Summary = { id: string; title: string; severity: string; status: string };

export default function IncidentList() {
  const { status, toolOutput } = useToolContext();
  const data = toolOutput as { count: number; incidents: Summary[] } | undefined;

  return (
    <main style={{ fontFamily: "system-ui, sans-serif", padding: 16 }}>
      <h1>Incident list</h1>
      {status !== "ready" || !data ? (
        <p>Unable to load incidents.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Id</th>
              <th>Title</th>
              <th>Severity</th>
              <th>Status</th>
            </tr>
          </thead>
          <tbody>
            {data.incidents.map((incident) => (
              <tr key={incident.id}>
                <td>{incident.id}</td>
                <td>{incident.title}</td>
                <td>{incident.severity}</td>
                <td>{incident.status}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
