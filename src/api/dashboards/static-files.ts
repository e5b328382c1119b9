import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { projectRoot } from '../../project-root.js';

/**
 * The web dashboards: plain ES modules, HTML and CSS from dashboards/web, and uPlot's own dist
 * files from node_modules, all served by the API process under /dashboard (no bundler, no CDN).
 * The file set is small and fixed, so it is listed rather than read from a folder at request time:
 * nothing outside it can be reached, whatever the path says.
 */

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Every page may load only what this origin serves (the browser enforces it: no CDN, no font
 * service, no beacon). Inline styles are allowed for uPlot, which positions its cursor and legend
 * with style attributes.
 */
export const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** URL path under /dashboard/ -> file, relative to the project root. */
export function dashboardFiles(): Map<string, string> {
  const web = 'dashboards/web';
  const files = new Map<string, string>([
    ['', `${web}/index.html`],
    ['creator', `${web}/creator.html`],
    ['finance', `${web}/finance.html`],
    ['vendor/uPlot.esm.js', 'node_modules/uplot/dist/uPlot.esm.js'],
    ['vendor/uPlot.min.css', 'node_modules/uplot/dist/uPlot.min.css'],
  ]);
  for (const name of [
    'index.html',
    'creator.html',
    'finance.html',
    'app.css',
    'favicon.svg',
    'lib/api.js',
    'lib/format.js',
    'lib/chart.js',
    'lib/session.js',
    'lib/ui.js',
    'lib/reports.js',
    'lib/date-range.js',
    'lib/tx-state.js',
    'portal.js',
    'creator.js',
    'swap-form.js',
    'fund-panel.js',
    'webhooks-panel.js',
    'finance.js',
    'reports-panel.js',
    'statements-panel.js',
    'periods-panel.js',
    'date-range-picker.js',
    'earnings-panel.js',
    'post-earnings-table.js',
    'audience-panel.js',
  ]) {
    files.set(name, `${web}/${name}`);
  }
  return files;
}

interface Cached {
  body: Buffer;
  etag: string;
  type: string;
}

export function registerDashboardFiles(app: FastifyInstance): void {
  const root = projectRoot();
  const files = dashboardFiles();
  // Read once per process; a changed file is seen after a restart (the ETag then changes).
  const cache = new Map<string, Promise<Cached>>();
  const load = (relative: string): Promise<Cached> => {
    let entry = cache.get(relative);
    if (!entry) {
      entry = readFile(path.join(root, relative)).then((body) => ({
        body,
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
        type: CONTENT_TYPES[path.extname(relative)] ?? 'application/octet-stream',
      }));
      entry.catch(() => cache.delete(relative));
      cache.set(relative, entry);
    }
    return entry;
  };

  const serve = async (name: string, ifNoneMatch: string | undefined, reply: FastifyReply) => {
    const relative = files.get(name);
    if (relative === undefined) {
      return reply.status(404).send({ error: 'not_found', message: `No dashboard file ${name}` });
    }
    const file = await load(relative);
    void reply
      .header('content-type', file.type)
      .header('etag', file.etag)
      // Revalidate every time (a 304 costs one round trip): a deploy is seen at once.
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer');
    if (file.type.startsWith('text/html')) {
      void reply.header('content-security-policy', DASHBOARD_CSP).header('x-frame-options', 'DENY');
    }
    if (ifNoneMatch === file.etag) return reply.status(304).send();
    return reply.send(file.body);
  };

  app.get('/dashboard', (_request, reply) => reply.redirect('/dashboard/', 302));
  app.get<{ Params: { '*': string } }>('/dashboard/*', (request, reply) =>
    serve(request.params['*'], request.headers['if-none-match'], reply),
  );
}
