import { lexicographicSortSchema, printSchema, type GraphQLSchema } from 'graphql';
import { builder } from './builder.js';
import './schema/index.js';

let built: GraphQLSchema | undefined;

/** The schema is built once per process: Pothos builders cannot be built twice. */
export function graphqlSchema(): GraphQLSchema {
  built ??= builder.toSchema();
  return built;
}

/** The SDL committed as schema/schema.graphql; sorted so field order changes make no diff noise. */
export function printGraphqlSchema(): string {
  return `${printSchema(lexicographicSortSchema(graphqlSchema()))}\n`;
}
