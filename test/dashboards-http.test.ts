import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { signAdminSession } from '../src/api/dashboards/admin-session.js';
import { DASHBOARD_CSP, dashboardFiles } from '../src/api/dashboards/static-files.js';
import { faucetGrantsKey, grantDevFunds } from '../src/app/dashboards/dev-faucet.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';

/**
 * The dashboards over plain HTTP: every page and asset is served by the API process and none
 * references another origin; the admin session and bull-board's check (an admin's key holding
 * every scope); the dev faucet and its limit; chainInfo's explorer link; viewer.topPosts against
 * the ledger.
 */
let h: ServiceHarness;
let admin: Member;
let user: Member;

beforeAll(async () => {
  h = await openServiceHarness();
  const adminAccount = await createAccount(h.env.app, { handle: 'ops_admin', role: 'admin' });
  admin = { account: adminAccount, key: (await createApiKey(h.env.app.apiKeys, adminAccount.id)).key };
  user = await h.member('plain_user', 0n);
});
afterAll(async () => {
  await h?.close();
});

/** The viewer a `read` key of `member` resolves to, for calling the faucet's service directly. */
function readViewer(member: Member) {
  return {
    accountId: member.account.id,
    handle: member.account.handle,
    walletAddress: member.account.walletAddress,
    role: 'user' as const,
    keyId: 'x',
    scopes: new Set(['read' as const]),
  };
}

/** Every URL an HTML page loads (src/href), and every module import or fetch a script makes. */
function referencesOf(text: string): string[] {
  return [
    ...[...text.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!),
    ...[...text.matchAll(/\bimport\s[^'"]*?from\s+'([^']+)'/g)].map((m) => m[1]!),
    ...[...text.matchAll(/\bfetch\(\s*[`'"]([^`'"]+)/g)].map((m) => m[1]!),
    ...[...text.matchAll(/url\(\s*['"]?([^'")]+)/g)].map((m) => m[1]!),
  ];
}

describe('dashboard files', () => {
  test('every page and asset is served locally, and none references another origin', async () => {
    const names = [...dashboardFiles().keys()];
    expect(names).toEqual(expect.arrayContaining(['', 'creator', 'finance', 'vendor/uPlot.esm.js']));
    for (const name of names) {
      const response = await fetch(`${h.base}/dashboard/${name}`);
      expect(response.status, name).toBe(200);
      const text = await response.text();
      const type = response.headers.get('content-type') ?? '';
      if (type.startsWith('text/html')) {
        expect(response.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
      }
      for (const reference of referencesOf(text)) {
        expect(reference, `${name} references ${reference}`).not.toMatch(/^(?:[a-z]+:)?\/\//i);
      }
      // Our own files carry no absolute URL at all (explorer links come from the API at run time).
      // (An XML namespace is a name, not something fetched.)
      if (!name.startsWith('vendor/')) {
        expect(text.replace(/xmlns="[^"]*"/g, ''), name).not.toMatch(/[a-z]+:\/\//i);
      }
    }
    // The pages' own references resolve on this server.
    const index = await (await fetch(`${h.base}/dashboard/`)).text();
    const local = referencesOf(index).filter((r) => r.startsWith('/'));
    expect(local.length).toBeGreaterThanOrEqual(4);
    for (const path of local) expect((await fetch(`${h.base}${path}`)).status, path).toBe(200);
  });

  test('/dashboard redirects to the portal; unknown files and path tricks are a JSON 404; ETags revalidate', async () => {
    const redirect = await fetch(`${h.base}/dashboard`, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('/dashboard/');
    for (const path of [
      '/dashboard/nope.js',
      '/dashboard/..%2Fpackage.json',
      '/dashboard/lib/../../package.json',
    ]) {
      const response = await fetch(`${h.base}${path}`);
      expect(response.status, path).toBe(404);
      expect(((await response.json()) as { error: string }).error).toBe('not_found');
    }
    const first = await fetch(`${h.base}/dashboard/app.css`);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^".+"$/);
    expect((await fetch(`${h.base}/dashboard/app.css`, { headers: { 'if-none-match': etag } })).status).toBe(
      304,
    );
  });
});

describe('operator pages (/admin/queues)', () => {
  const session = (key: string) =>
    fetch(`${h.base}/dashboard/session`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });

  test('refused without credentials, and to a key whose account is not an admin', async () => {
    const anonymous = await fetch(`${h.base}/admin/queues`);
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { error: string }).error).toBe('unauthorized');
    const asUser = await fetch(`${h.base}/admin/queues`, {
      headers: { authorization: `Bearer ${user.key}` },
    });
    expect(asUser.status).toBe(403);
    expect((await session(user.key)).status).toBe(403);
    const forged = await fetch(`${h.base}/admin/queues`, {
      headers: { cookie: `lf_admin=${admin.key.slice(8, 16)}.9999999999.${'A'.repeat(43)}` },
    });
    expect(forged.status).toBe(401);
  });

  test('an admin key opens a short-lived HttpOnly session that shows the payments queue, with no outside font', async () => {
    const opened = await session(admin.key);
    expect(opened.status).toBe(200);
    const setCookie = opened.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^lf_admin=[^;]+; Path=\/admin; Max-Age=900; HttpOnly; SameSite=Strict$/);
    const cookie = setCookie.split(';')[0]!;
    expect(cookie).not.toContain(admin.key);

    const pageResponse = await fetch(`${h.base}/admin/queues`, { headers: { cookie } });
    expect(pageResponse.status).toBe(200);
    const html = await pageResponse.text();
    expect(html).toContain('<div id="root">');
    expect(html).not.toMatch(/https?:\/\//);
    const queues = await fetch(`${h.base}/admin/queues/api/queues`, { headers: { cookie } });
    expect(queues.status).toBe(200);
    const body = (await queues.json()) as { queues: Array<{ name: string }> };
    expect(body.queues.map((q) => q.name)).toContain('payments');
    // Scripts can use the key directly.
    const withHeader = await fetch(`${h.base}/admin/queues/api/queues`, {
      headers: { authorization: `Bearer ${admin.key}` },
    });
    expect(withHeader.status).toBe(200);

    // Revoking the key ends the session at once.
    await h.env.app.apiKeys.revoke(admin.key.slice(8, 16), null, new Date());
    expect((await fetch(`${h.base}/admin/queues`, { headers: { cookie } })).status).toBe(401);
  });

  test("an admin's key lacking a scope opens no session and cannot pause or empty a queue; a full admin key can", async () => {
    const delegator = await createAccount(h.env.app, { handle: 'ops_delegator', role: 'admin' });
    const full = (await createApiKey(h.env.app.apiKeys, delegator.id)).key;
    const engageOnly = await createApiKey(h.env.app.apiKeys, delegator.id, ['engage']);
    const queue = h.env.app.payments.queue;
    const board = `${h.base}/admin/queues/api/queues`;
    const expectForbidden = async (response: Response, what: string) => {
      expect(response.status, what).toBe(403);
      expect(await response.json(), what).toEqual({
        error: 'forbidden',
        message: expect.stringContaining("lacks the 'read', 'post', 'send' scopes"),
      });
    };

    const opened = await session(engageOnly.key);
    await expectForbidden(opened, 'session');
    expect(opened.headers.get('set-cookie')).toBeNull();
    const bearer = { authorization: `Bearer ${engageOnly.key}` };
    // A cookie for the key, as the session would have signed it: judged by the key as it is now.
    const expiresAt = new Date(Date.now() + 60_000);
    const cookie = `lf_admin=${signAdminSession(h.env.app.cursorSecret, engageOnly.info.id, expiresAt)}`;
    for (const headers of [bearer, { cookie }]) {
      const which = 'cookie' in headers ? 'cookie' : 'bearer';
      await expectForbidden(await fetch(`${h.base}/admin/queues`, { headers }), `${which} page`);
      await expectForbidden(await fetch(board, { headers }), `${which} list`);
      for (const action of ['pause', 'empty', 'obliterate']) {
        const response = await fetch(`${board}/${queue.name}/${action}`, { method: 'PUT', headers });
        await expectForbidden(response, `${which} ${action}`);
      }
      await expectForbidden(await fetch(`${board}/pause`, { method: 'PUT', headers }), `${which} pause all`);
    }
    expect(await queue.isPaused()).toBe(false);

    // The full key of the same admin still runs the board: a session, then pause and resume.
    const fullSession = await session(full);
    expect(fullSession.status).toBe(200);
    const fullCookie = fullSession.headers.get('set-cookie')!.split(';')[0]!;
    try {
      const paused = await fetch(`${board}/${queue.name}/pause`, {
        method: 'PUT',
        headers: { cookie: fullCookie },
      });
      expect(paused.status).toBe(200);
      expect(await queue.isPaused()).toBe(true);
      const resumed = await fetch(`${board}/${queue.name}/resume`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${full}` },
      });
      expect(resumed.status).toBe(200);
      expect(await queue.isPaused()).toBe(false);
    } finally {
      await queue.resume();
    }
  });
});

describe('dashboard GraphQL', () => {
  test('chainInfo: localnet, faucet available, explorer link in the custom-cluster form with the RPC URL', async () => {
    const { data, errors } = await h.gql(
      user,
      '{ chainInfo { cluster faucetAvailable explorerTxUrlTemplate } }',
    );
    expect(errors).toBeUndefined();
    expect(data.chainInfo.cluster).toBe('localnet');
    expect(data.chainInfo.faucetAvailable).toBe(true);
    expect(data.chainInfo.explorerTxUrlTemplate).toBe(
      `https://explorer.solana.com/tx/{signature}?cluster=custom&customUrl=${encodeURIComponent(h.env.app.publicRpcUrl)}`,
    );
  });

  test('devFaucet credits $10 on chain and in the ledger, at most 3 times per 10 minutes', async () => {
    const faucetUser = await h.member('faucet_user', 0n);
    for (let i = 1; i <= 3; i++) {
      const { data, errors } = await h.gql(faucetUser, 'mutation { devFaucet { signature amountUsdMicro } }');
      expect(errors).toBeUndefined();
      expect(data.devFaucet.amountUsdMicro).toBe('10000000');
      const { data: me } = await h.gql(faucetUser, '{ viewer { earnedUsdc } }');
      expect(me.viewer.earnedUsdc).toBe(String(i * 10_000_000));
    }
    const fourth = await h.gql(faucetUser, 'mutation { devFaucet { signature } }');
    expect(fourth.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    const onChain = await h.env.app.rpc.call<{ value: Array<{ account: { data: { parsed: any } } }> }>(
      'getTokenAccountsByOwner',
      [
        faucetUser.account.walletAddress,
        { mint: h.platform.usdcMint.toBase58() },
        { encoding: 'jsonParsed' },
      ],
    );
    expect(onChain.value[0]?.account.data.parsed.info.tokenAmount.amount).toBe('30000000');
  });

  test('the faucet refuses a cluster where the platform does not mint (devnet) before counting anything', async () => {
    const deps = {
      ...h.env.app,
      bootstrapChain: () =>
        Promise.resolve({ ...h.platform, cluster: 'devnet' as const, mintsTestTokens: false }),
    };
    const viewer = readViewer(user);
    await expect(grantDevFunds(deps, viewer)).rejects.toMatchObject({ code: 'forbidden' });
    expect(await h.env.app.redis.exists(faucetGrantsKey(h.env.app.redisPrefix, user.account.id))).toBe(0);
  });

  test('the faucet limit holds over any 10 minutes, not per clock window', async () => {
    const member = await h.member('faucet_clock', 0n);
    const viewer = readViewer(member);
    // A fake clock 1 s before a 10-minute boundary of the epoch (1_800_000_000_000 is a multiple
    // of 600_000 ms): a fixed window would start afresh 2 s later and grant three more at once.
    const t0 = 1_800_000_000_000 - 1_000;
    let now = t0;
    const grant = () => grantDevFunds({ ...h.env.app, now: () => now }, viewer);
    for (let i = 0; i < 3; i++) await grant();
    now = t0 + 2_000;
    await expect(grant()).rejects.toMatchObject({
      code: 'rate_limited',
      details: { retryAfterSeconds: 598 },
    });
    // Ten minutes after the first three, all three have left the window (the refused attempt never
    // counted): three more, and no fourth.
    now = t0 + 600_000;
    for (let i = 0; i < 3; i++) expect((await grant()).amountMicro).toBe(10_000_000n);
    await expect(grant()).rejects.toMatchObject({
      code: 'rate_limited',
      details: { retryAfterSeconds: 600 },
    });
    const { data } = await h.gql(member, '{ viewer { earnedUsdc } }');
    expect(data.viewer.earnedUsdc).toBe('60000000');
  });

  test('topPosts ranks the own posts by earned shares and by engagement, from the ledger', async () => {
    const author = await h.member('top_author', 5_000_000n);
    const fan = await h.member('top_fan', 10_000_000n);
    const post = async (who: Member, body: Record<string, string>) =>
      ((await (await h.call(who, 'POST', '/posts', body)).json()) as { id: string }).id;
    const quiet = await post(author, { content: 'quiet post', type: 'post' });
    const liked = await post(author, { content: 'liked post', type: 'post' });
    const paid = await post(author, { content: 'replied post', type: 'post' });
    await post(fan, { content: 'a reply', type: 'reply', parent_id: paid });
    for (const id of [liked]) expect((await h.call(fan, 'POST', `/posts/${id}/like`)).status).toBe(200);
    expect((await h.call(author, 'POST', `/posts/${liked}/like`)).status).toBe(200);
    await paymentsSettled(h.env.app.db);

    const { data, errors } = await h.gql(
      author,
      `{ viewer { e: topPosts(by: EARNINGS, first: 3) { postId earnedUsdMicro likes replies }
                  g: topPosts(by: ENGAGEMENT, first: 3) { postId earnedUsdMicro likes replies } } }`,
    );
    expect(errors).toBeUndefined();
    expect(data.viewer.e[0]).toEqual({ postId: paid, earnedUsdMicro: '500000', likes: 0, replies: 1 });
    expect((data.viewer.g as Array<{ postId: string }>).map((p) => p.postId)).toEqual([liked, paid, quiet]);
    const bad = await h.gql(author, '{ viewer { topPosts(by: EARNINGS, first: 21) { postId } } }');
    expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});
