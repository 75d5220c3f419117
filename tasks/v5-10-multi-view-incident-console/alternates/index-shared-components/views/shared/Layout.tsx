// Alternate legitimate solution: the layout both views share: a heading, then the body or the placeholder.
import type { ReactNode } from "react";

export function Layout(props: { heading: string; placeholder: string; children?: ReactNode }) {
  return (
    <article style={{ fontFamily: "system-ui, sans-serif", padding: 12 }}>
      <h1 style={{ fontSize: 18 }}>{props.heading}</h1>
      {props.children ?? <p role="status">{props.placeholder}</p>}
    </article>
  );
}
