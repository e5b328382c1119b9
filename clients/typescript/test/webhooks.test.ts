import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { signatureHeader } from '../../../src/domain/webhooks/signature.js';
import { openServiceHarness, type ServiceHarness } from '../../../test/support/service-harness.js';
import { until } from '../../../test/support/until.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../../test/support/webhook-receiver.js';
import { createLedgerfeedClient, LedgerfeedError, verifyWebhook } from '../src/index.js';

/** verifyWebhook against a delivery the service really sent, and against the service's own signer. */
let h: ServiceHarness;
let receiver: WebhookReceiver;

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await h?.close();
});

/** The LedgerfeedError verifyWebhook throws, or a failure when it accepts. */
function refusal(check: () => unknown): LedgerfeedError {
  try {
    check();
  } catch (error) {
    if (error instanceof LedgerfeedError) return error;
    throw error;
  }
  throw new Error('verifyWebhook accepted what it should refuse');
}

describe('verifyWebhook', () => {
  test('accepts a real delivery and refuses a changed body, an old timestamp and a wrong secret', async () => {
    const star = await h.member('hook_star', 0n);
    const fan = await h.member('hook_fan', 0n);
    const client = createLedgerfeedClient({ baseUrl: h.base, apiKey: star.key });
    const { data: hook } = await client.rest.POST('/api/v1/webhooks', {
      body: { url: `${receiver.url}/hook`, events: ['follow.created'] },
    });
    await createLedgerfeedClient({ baseUrl: h.base, apiKey: fan.key }).rest.POST(
      '/api/v1/users/{handle}/follow',
      {
        params: { path: { handle: 'hook_star' } },
      },
    );
    const delivery = await until(
      'the follow delivered',
      () => Promise.resolve(receiver.requests[0]),
      (request) => request !== undefined,
    );

    const event = verifyWebhook(hook!.secret, delivery!.headers, delivery!.rawBody);
    expect(event).toMatchObject({
      type: 'follow.created',
      id: delivery!.event.id,
      sequence: expect.any(Number),
    });
    // A fetch-style Headers and a Buffer body are read the same.
    const headers = new Headers({
      'Ledgerfeed-Signature': String(delivery!.headers['ledgerfeed-signature']),
    });
    expect(verifyWebhook(hook!.secret, headers, Buffer.from(delivery!.rawBody)).id).toBe(event.id);

    const changed = delivery!.rawBody.replace('follow.created', 'follow.created ');
    expect(refusal(() => verifyWebhook(hook!.secret, delivery!.headers, changed))).toMatchObject({
      status: 400,
      error: 'invalid_signature',
      message: 'no v1 signature matches this secret',
    });
    const signedAt = Number(/t=(\d+)/.exec(String(delivery!.headers['ledgerfeed-signature']))![1]);
    expect(
      refusal(() =>
        verifyWebhook(hook!.secret, delivery!.headers, delivery!.rawBody, { nowSec: signedAt + 301 }),
      ).message,
    ).toMatch(/outside the 300 s tolerance/);
    // A tolerance of the receiver's own choosing.
    expect(
      verifyWebhook(hook!.secret, delivery!.headers, delivery!.rawBody, {
        nowSec: signedAt + 301,
        toleranceSec: 600,
      }).id,
    ).toBe(event.id);
    expect(
      refusal(() => verifyWebhook('whsec_not_this_one', delivery!.headers, delivery!.rawBody)).message,
    ).toBe('no v1 signature matches this secret');
    expect(refusal(() => verifyWebhook(hook!.secret, {}, delivery!.rawBody)).message).toBe(
      'no Ledgerfeed-Signature header',
    );
  });

  test('during a rotation either secret verifies; a moved timestamp breaks the signature', () => {
    const body = '{"id":"evt_1","type":"post.liked","sequence":1}';
    const header = signatureHeader(['whsec_new', 'whsec_old'], 1_700_000_000, body);
    const at = { nowSec: 1_700_000_010 };
    expect(verifyWebhook('whsec_new', { 'ledgerfeed-signature': header }, body, at).id).toBe('evt_1');
    expect(verifyWebhook('whsec_old', { 'ledgerfeed-signature': header }, body, at).id).toBe('evt_1');
    const moved = header.replace('t=1700000000', 't=1700000300');
    expect(
      refusal(() =>
        verifyWebhook('whsec_new', { 'ledgerfeed-signature': moved }, body, { nowSec: 1_700_000_300 }),
      ),
    ).toMatchObject({ error: 'invalid_signature' });
  });
});
