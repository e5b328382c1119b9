/**
 * A GraphQL request as a client sends it over HTTP: POST `${base}/graphql` with the key as a
 * bearer token, a JSON body, asking for application/graphql-response+json (GraphQL over HTTP).
 */
export function postGraphql(
  base: string,
  key: string,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<Response> {
  return fetch(`${base}/graphql`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
    },
    body: JSON.stringify({ query, variables }),
  });
}
