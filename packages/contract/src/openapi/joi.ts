import type Joi from 'joi';
import parse from 'joi-to-json';

export type JsonSchema = Record<string, unknown>;

/**
 * A Joi schema as an OpenAPI 3.1 (JSON Schema 2020-12) schema, by joi-to-json. A schema named
 * with `.id()` becomes a component: it lands in `components` and is referenced by `$ref`.
 */
export function toJsonSchema(schema: Joi.Schema, components: Record<string, JsonSchema>): JsonSchema {
  const out = parse(schema as never, 'open-api-3.1', components) as JsonSchema;
  delete out.schemas;
  return out;
}
