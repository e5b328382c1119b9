/**
 * Preloaded into the PostGraphile peer's process (`node --import`): every `graphql` that
 * PostGraphile's packages require resolves to the one copy PostGraphile itself depends on (15.x).
 *
 * Why: npm hoisted parts of PostGraphile v4 (graphile-build-pg, graphql-parse-resolve-info) to
 * the top of node_modules, beside the service's graphql 16, and gave graphile-build-pg a graphql
 * copy of its own. Three graphql instances in one schema fail every query with "Cannot use
 * GraphQLScalarType "Int" from another module or realm". A PostGraphile installed on its own has
 * exactly one; this gives the peer that, without touching node_modules.
 */
import Module, { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const postgraphileDir = path.dirname(require.resolve('postgraphile/package.json'));
const graphqlDir = path.dirname(
  createRequire(path.join(postgraphileDir, 'package.json')).resolve('graphql/package.json'),
);

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  const own = request === 'graphql' || request.startsWith('graphql/');
  return resolveFilename.call(this, own ? graphqlDir + request.slice('graphql'.length) : request, ...rest);
};
