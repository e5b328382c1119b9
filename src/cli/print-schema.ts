import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { generatedClientTypes } from '../../clients/typescript/scripts/generated-types.js';
import { printGraphqlSchema } from '../api/graphql/graphql-schema.js';
import { printOpenApi } from '../api/openapi.js';

/**
 * Writes the committed API descriptions: schema/schema.graphql from the Pothos builder and
 * schema/openapi.json from the REST route schemas; then the typed client's generated types from
 * those two (clients/typescript/src/generated). Tests fail when any of them is stale.
 */
const graphql = printGraphqlSchema();
const openapi = await printOpenApi();
const written = [
  { url: new URL('../../schema/schema.graphql', import.meta.url), text: graphql },
  { url: new URL('../../schema/openapi.json', import.meta.url), text: openapi },
  ...(await generatedClientTypes(openapi, graphql)).map((file) => ({
    url: new URL(`../../clients/typescript/${file.path}`, import.meta.url),
    text: file.text,
  })),
];
for (const { url, text } of written) {
  mkdirSync(dirname(url.pathname), { recursive: true });
  writeFileSync(url, text);
  console.log(`wrote ${url.pathname}`);
}
