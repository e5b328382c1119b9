import { writeFileSync } from 'node:fs';
import { printGraphqlSchema } from '../api/graphql/graphql-schema.js';
import { printOpenApi } from '../api/openapi.js';

/**
 * Writes the committed API descriptions: schema/schema.graphql from the Pothos builder and
 * schema/openapi.json from the REST route schemas. Tests fail when either is stale.
 */
const graphql = new URL('../../schema/schema.graphql', import.meta.url);
writeFileSync(graphql, printGraphqlSchema());
const openapi = new URL('../../schema/openapi.json', import.meta.url);
writeFileSync(openapi, await printOpenApi());
console.log(`wrote ${graphql.pathname}\nwrote ${openapi.pathname}`);
