// Turns the operations of openapi.json into flat tool definitions: path, query and
// JSON-body fields all become top-level tool arguments. Only JSON types are
// enforced locally (no coercion); value rules (enums, minimums) are left to the
// service, which is the source of truth.
import { readFileSync } from "node:fs";
import { z } from "zod";

type Json = Record<string, any>;

export interface Operation {
  operationId: string;
  method: string;
  path: string;
  description: string;
  pathParams: string[];
  queryParams: string[];
  /** Body field names, or undefined when the operation takes no request body. */
  bodyFields: string[] | undefined;
  inputSchema: z.ZodObject<Record<string, z.ZodType>>;
}

export function loadSpec(): Json {
  return JSON.parse(readFileSync(new URL("../openapi.json", import.meta.url), "utf8"));
}

function deref(spec: Json, node: Json): Json {
  let current = node;
  while (current && typeof current.$ref === "string") {
    const pointer = current.$ref.replace(/^#\//, "").split("/");
    current = pointer.reduce((acc: Json, key: string) => acc[key], spec);
  }
  return current;
}

function toZod(spec: Json, node: Json | undefined): z.ZodType {
  const schema = deref(spec, node ?? {});
  let out: z.ZodType;
  switch (schema.type) {
    case "string":
      out = z.string();
      break;
    case "integer":
      out = z.int();
      break;
    case "number":
      out = z.number();
      break;
    case "boolean":
      out = z.boolean();
      break;
    case "array":
      out = z.array(toZod(spec, schema.items));
      break;
    case "object": {
      const required = new Set<string>(schema.required ?? []);
      const shape: Record<string, z.ZodType> = {};
      for (const [name, prop] of Object.entries<Json>(schema.properties ?? {})) {
        const field = toZod(spec, prop);
        shape[name] = required.has(name) ? field : field.optional();
      }
      out = z.object(shape);
      break;
    }
    default:
      out = z.unknown();
  }
  return schema.description ? out.describe(schema.description) : out;
}

export function collectOperations(spec: Json): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(spec.paths ?? {})) {
    for (const method of ["get", "post", "put", "patch", "delete"]) {
      const op = item[method];
      if (!op?.operationId) continue;
      const shape: Record<string, z.ZodType> = {};
      const pathParams: string[] = [];
      const queryParams: string[] = [];
      for (const raw of [...(item.parameters ?? []), ...(op.parameters ?? [])]) {
        const param = deref(spec, raw);
        let field = toZod(spec, param.schema);
        if (param.description) field = field.describe(param.description);
        if (param.in === "path") pathParams.push(param.name);
        else if (param.in === "query") queryParams.push(param.name);
        else continue;
        shape[param.name] = param.in === "path" || param.required ? field : field.optional();
      }
      let bodyFields: string[] | undefined;
      const body = op.requestBody ? deref(spec, op.requestBody) : undefined;
      const bodySchema = body?.content?.["application/json"]?.schema;
      if (bodySchema) {
        const resolved = deref(spec, bodySchema);
        const required = new Set<string>(body.required ? resolved.required ?? [] : []);
        bodyFields = [];
        for (const [name, prop] of Object.entries<Json>(resolved.properties ?? {})) {
          const field = toZod(spec, prop);
          shape[name] = required.has(name) ? field : field.optional();
          bodyFields.push(name);
        }
      }
      operations.push({
        operationId: op.operationId,
        method: method.toUpperCase(),
        path,
        description: [op.summary, op.description].filter(Boolean).join(". "),
        pathParams,
        queryParams,
        bodyFields,
        inputSchema: z.object(shape),
      });
    }
  }
  return operations;
}
