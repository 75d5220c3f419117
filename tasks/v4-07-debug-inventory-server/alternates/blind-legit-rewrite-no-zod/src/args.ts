// Minimal Standard Schema for tool arguments: every property is required and is
// either a JSON string or a JSON integer. Values are never coerced.
import type { StandardSchemaWithJSON } from "mcp-use";

type Kind = "string" | "integer";
type Shape = Record<string, Kind>;
type Out<S extends Shape> = { [K in keyof S]: S[K] extends "integer" ? number : string };

export function args<S extends Shape>(shape: S): StandardSchemaWithJSON<Out<S>, Out<S>> {
  const toJson = () => ({
    type: "object",
    properties: Object.fromEntries(Object.entries(shape).map(([name, type]) => [name, { type }])),
    required: Object.keys(shape),
  });
  return {
    "~standard": {
      version: 1,
      vendor: "inventory",
      validate(input: unknown) {
        if (typeof input !== "object" || input === null) return { issues: [{ message: "expected an object" }] };
        const record = input as Record<string, unknown>;
        const issues: { message: string; path: string[] }[] = [];
        for (const [name, type] of Object.entries(shape)) {
          const value = record[name];
          const ok =
            type === "string" ? typeof value === "string" : typeof value === "number" && Number.isInteger(value);
          if (!ok) issues.push({ path: [name], message: `${name} must be a JSON ${type}` });
        }
        if (issues.length) return { issues };
        const value = Object.fromEntries(Object.keys(shape).map((name) => [name, record[name]]));
        return { value: value as Out<S> };
      },
      jsonSchema: { input: toJson, output: toJson },
    },
  };
}
