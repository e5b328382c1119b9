import type { FastifyInstance } from 'fastify';
import { authenticate } from '../../domain/auth/api-keys.service.js';
import type { ApiDeps } from '../../app/api-deps.js';
import {
  ADMIN_SESSION_SECONDS,
  adminCookieHeader,
  requireOperatorKey,
  signAdminSession,
} from './admin-session.js';
import { QUEUE_BOARD_PATH, registerQueueBoard } from './queue-board.js';
import { registerDashboardFiles } from './static-files.js';

/**
 * The web dashboards (/dashboard: developer portal, creator, finance), the admin session that
 * opens the operator pages, and bull-board (/admin/queues). The pages talk to /graphql (and to
 * POST /api/v1/accounts for sign-up) with the API key the user typed, kept in sessionStorage.
 */
export async function registerDashboards(
  app: FastifyInstance,
  deps: ApiDeps,
  options: { queueBoard: boolean },
): Promise<void> {
  registerDashboardFiles(app);

  // Trades an admin key holding every scope (Authorization: Bearer) for the HttpOnly cookie
  // bull-board's pages need.
  app.post('/dashboard/session', async (request, reply) => {
    const viewer = await authenticate(deps.apiKeys, request.headers.authorization);
    requireOperatorKey(viewer, 'The operator pages');
    const expiresAt = new Date(Date.now() + ADMIN_SESSION_SECONDS * 1000);
    const value = signAdminSession(deps.cursorSecret, viewer.keyId, expiresAt);
    return reply
      .header('set-cookie', adminCookieHeader(request, value, ADMIN_SESSION_SECONDS))
      .header('cache-control', 'no-store')
      .send({ admin: true, queues_url: `${QUEUE_BOARD_PATH}`, expires_at: expiresAt.toISOString() });
  });
  app.delete('/dashboard/session', (request, reply) =>
    reply.header('set-cookie', adminCookieHeader(request, '', 0)).send({ admin: false }),
  );

  if (options.queueBoard) await registerQueueBoard(app, deps);
}
