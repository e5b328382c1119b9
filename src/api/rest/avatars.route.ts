import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../../app/api-deps.js';

const ACCOUNT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * GET /avatars/:id.svg: the default avatar of an account without one, generated from its id (a
 * colour and the first letter of the handle), so `avatar_url` is always a working URL. Public and
 * cacheable: it reveals nothing the public profile does not.
 */
export function registerAvatarRoute(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { file: string } }>('/avatars/:file', async (request, reply) => {
    const id = request.params.file.replace(/\.svg$/, '');
    // Only a real UUID reaches Postgres: 36 hex digits and dashes in any order (`----…`) failed
    // the uuid cast there and answered 500. Lower case only: the URLs we hand out are.
    const account = ACCOUNT_ID.test(id) ? await deps.accounts.byId(id) : undefined;
    if (!account) return reply.status(404).send({ error: 'not_found', message: 'No such avatar' });
    const hue = createHash('sha256').update(account.id).digest()[0]! * (360 / 256);
    const letter = (account.handle[0] ?? '?').toUpperCase();
    const svg =
      `<svg xmlns="http://www.w3.org/2000/svg" width="128" height="128" viewBox="0 0 128 128" role="img" aria-label="${letter}">` +
      `<rect width="128" height="128" rx="64" fill="hsl(${hue.toFixed(0)} 55% 45%)"/>` +
      `<text x="64" y="82" font-family="system-ui,sans-serif" font-size="56" fill="#fff" text-anchor="middle">${letter}</text></svg>`;
    return reply
      .header('content-type', 'image/svg+xml')
      .header('cache-control', 'public, max-age=86400')
      .send(svg);
  });
}
