import { writeFileSync } from 'node:fs';
import { printGraphqlSchema } from '../api/graphql/graphql-schema.js';

/** Writes schema/schema.graphql from the Pothos builder; test/graphql-schema.test.ts keeps it fresh. */
const target = new URL('../../schema/schema.graphql', import.meta.url);
writeFileSync(target, printGraphqlSchema());
console.log(`wrote ${target.pathname}`);
