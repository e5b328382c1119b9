import type { FastifyInstance, FastifyTypeProvider } from 'fastify';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';

/**
 * Request types derived from each route's JSON schemas (params, querystring, body, headers) with
 * json-schema-to-ts: the schema that validates a request is its only description, with no
 * hand-written twin to drift from it. Replies stay unchecked, as before: the response schemas
 * serialize, and their types would demand index signatures of every view.
 */
interface RequestSchemaTypes extends FastifyTypeProvider {
  validator: this['schema'] extends JSONSchema ? FromSchema<this['schema']> : unknown;
  serializer: unknown;
}

/** The REST routes' instance typed by their schemas. A schema must be `as const` to be read. */
export function typedRoutes(api: FastifyInstance) {
  return api.withTypeProvider<RequestSchemaTypes>();
}
