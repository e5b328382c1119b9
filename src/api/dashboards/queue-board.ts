import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../../app/api-deps.js';
import { httpStatusOf } from '../error-map.js';
import { AppError } from '../../domain/errors.js';
import { requireAdmin } from './admin-session.js';

export const QUEUE_BOARD_PATH = '/admin/queues';

/**
 * bull-board over every BullMQ queue this deployment runs (today: `payments`), read-write, for an
 * admin's key holding every scope only, checked on every request (requireAdmin): its buttons pause,
 * empty and retry the payments queue. No lesser key reaches it, so there is no read-only mount.
 * It lives in its own encapsulated plugin, so its hook, its static files and its view engine touch
 * no other route. Its page links a web font from a font service; that link is cut from the HTML so
 * the operator page, like the dashboards, loads nothing from outside (system fonts instead).
 */
export async function registerQueueBoard(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(QUEUE_BOARD_PATH);
  createBullBoard({
    queues: [new BullMQAdapter(deps.payments.queue)],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Ledgerfeed queues' } },
  });
  await app.register(async (board) => {
    // Answered here rather than thrown: bull-board's own error handler would turn a refusal into a 500.
    board.addHook('onRequest', async (request, reply) => {
      try {
        await requireAdmin(deps.apiKeys, deps.cursorSecret, request);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        return reply.status(httpStatusOf[error.code]).send({ error: error.code, message: error.message });
      }
    });
    board.addHook('onSend', async (_request, reply, payload) => {
      if (typeof payload !== 'string' || !String(reply.getHeader('content-type')).startsWith('text/html')) {
        return payload;
      }
      return payload.replace(/<link[^>]+href="https?:\/\/[^"]*"[^>]*>/g, '');
    });
    await board.register(serverAdapter.registerPlugin(), { prefix: QUEUE_BOARD_PATH });
  });
}
