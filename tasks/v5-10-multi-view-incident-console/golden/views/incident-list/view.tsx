// Golden solution: the view of list_incidents, a table of the incidents the tool returned.
import { useToolContext } from "mcp-use/react";

type Summary = { id: string; title: string; severity: string; status: string };

export default function IncidentList() {
  const view = useToolContext();
  const data = view.status === "ready" ? (view.toolOutput as { incidents?: Summary[] }) : undefined;
  return (
    <main>
      <h1>Incident list</h1>
      {data?.incidents ? (
        <table>
          <tbody>
            {data.incidents.map((i) => (
              <tr key={i.id}>
                <td>{i.id}</td>
                <td>{i.title}</td>
                <td>{i.severity}</td>
                <td>{i.status}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p>Unable to load incidents.</p>
      )}
    </main>
  );
}
