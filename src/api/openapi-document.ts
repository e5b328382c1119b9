import { STATUS_CODES } from 'node:http';
import type { SwaggerTransformObject } from '@fastify/swagger';
import {
  closeBlockedBody,
  errorBody,
  insufficientBalanceBody,
  insufficientNativeBody,
} from './rest/schemas.js';

/**
 * The finishing touches @fastify/swagger cannot derive from the route schemas, applied to the
 * document it built (its `transformObject`): schema/openapi.json and GET /api/v1/openapi.json are
 * both this document. The route schemas stay as they are, since Fastify serialises with them.
 */
export const finishOpenApiDocument: SwaggerTransformObject = (built) => {
  if (!('openapiObject' in built)) return built.swaggerObject;
  const document = built.openapiObject as OpenApiDocument;
  markOptionalBodies(document);
  shareErrorSchema(document);
  return built.openapiObject;
};

/**
 * Every 4xx and 5xx answer is `{ error, message }` (src/api/error-response.ts); a 402
 * insufficient_balance adds what the account had and what the request needed.
 */
const ERROR_SCHEMA = {
  type: 'object',
  required: errorBody.required,
  description:
    'Every 4xx and 5xx answer. A 402 insufficient_balance adds balance_usd and required_usd (a USDC payment) or balance_tokens and required_tokens (a swap); a 409 close_blocked adds blockers',
  properties: {
    error: { type: 'string', description: 'A stable code, e.g. invalid_request, not_found, rate_limited' },
    message: { type: 'string', description: 'What went wrong, for people' },
    balance_usd: {
      ...insufficientBalanceBody.properties.balance_usd,
      description: 'USDC available, in dollars',
    },
    required_usd: {
      ...insufficientBalanceBody.properties.required_usd,
      description: 'USDC the request needed, in dollars',
    },
    balance_tokens: insufficientNativeBody.properties.balance_tokens,
    required_tokens: insufficientNativeBody.properties.required_tokens,
    blockers: closeBlockedBody.properties.blockers,
  },
} as const;

const ERROR_REF = '#/components/schemas/Error';

interface OpenApiDocument {
  paths?: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, unknown> };
}

interface OpenApiOperation {
  requestBody?: OpenApiBody;
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: OpenApiSchema }> }>;
}

interface OpenApiBody {
  required?: boolean;
  content?: Record<string, { schema?: OpenApiSchema }>;
}

interface OpenApiSchema {
  type?: string | string[];
  properties?: Record<string, unknown>;
}

/**
 * The route schemas inline their error bodies (errorBody and the 402 variants), which a client
 * generator would turn into one type per operation and status: here each becomes a reference to
 * the one `Error` schema. A route error body with a field `Error` lacks stops the document from
 * being built, so no field is lost from the document unnoticed.
 */
function shareErrorSchema(document: OpenApiDocument): void {
  const known = new Set(Object.keys(ERROR_SCHEMA.properties));
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (Number(status) < 400) continue;
        for (const media of Object.values(response.content ?? {})) {
          const unknownField = Object.keys(media.schema?.properties ?? {}).find((field) => !known.has(field));
          if (unknownField) {
            throw new Error(
              `${method.toUpperCase()} ${path} ${status}: field ${unknownField} is not in components.schemas.Error (src/api/openapi-document.ts)`,
            );
          }
          media.schema = { $ref: ERROR_REF } as OpenApiSchema;
        }
        // Fastify's 'Default Response' says nothing; the status says what it is.
        response.description = STATUS_CODES[status] ?? response.description;
      }
    }
  }
  document.components = {
    ...document.components,
    schemas: { ...document.components?.schemas, Error: ERROR_SCHEMA },
  };
}

/**
 * @fastify/swagger marks every request body required. A route whose body schema admits null also
 * takes no body at all (POST /webhooks/{id}/replay: none means from the start): its body is
 * marked optional, so a generated client does not force its callers to send one.
 */
function markOptionalBodies(document: OpenApiDocument): void {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const body = operation.requestBody;
      if (!body?.content) continue;
      const schemas = Object.values(body.content).map((media) => media.schema);
      const admitsNull = (type: string | string[] | undefined) =>
        Array.isArray(type) ? type.includes('null') : type === 'null';
      if (schemas.every((schema) => admitsNull(schema?.type))) body.required = false;
    }
  }
}
