// Negative: the list view reads its data with useWidget, a hook mcp-use/react does not export (it has useToolContext).
import { useWidget } from "mcp-use/react";

type Summary = { id: string; title: string; severity: string; status: string };

export default function IncidentList() {
  const { props } = useWidget<{ incidents?: Summary[] }>();
  const data = props;
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
