// A tiny hand-written Standard Schema (https://standardschema.dev) for an object of
// required integer fields. mcp-use accepts any schema implementing both
// `~standard.validate` and `~standard.jsonSchema`, so no schema library is needed.
import type { StandardSchemaWithJSON } from "mcp-use";

type IntegerFields<K extends string> = { [P in K]: number };

export function integerObject<K extends string>(
  fields: Record<K, string>,
): StandardSchemaWithJSON<IntegerFields<K>, IntegerFields<K>> {
  const names = Object.keys(fields) as K[];
  const jsonSchema = () => ({
    type: "object",
    properties: Object.fromEntries(
      names.map((name) => [name, { type: "integer", description: fields[name] }]),
    ),
    required: [...names],
  });
  return {
    "~standard": {
      version: 1,
      vendor: "add-server",
      validate(value: unknown) {
        if (typeof value !== "object" || value === null || Array.isArray(value)) {
          return { issues: [{ message: "arguments must be an object" }] };
        }
        const record = value as Record<string, unknown>;
        const issues: { message: string; path: string[] }[] = [];
        for (const name of names) {
          const v = record[name];
          // Only a JSON number without a fractional part is an integer: "2" is a string.
          if (typeof v !== "number" || !Number.isSafeInteger(v)) {
            issues.push({ message: `${name} must be a JSON integer, got ${JSON.stringify(v)}`, path: [name] });
          }
        }
        if (issues.length > 0) return { issues };
        const out = {} as IntegerFields<K>;
        for (const name of names) out[name] = record[name] as number;
        return { value: out };
      },
      jsonSchema: { input: jsonSchema, output: jsonSchema },
    },
  };
}
