import { describe, expect, test } from 'vitest';
import {
  checkWebhookUrl,
  NOT_PUBLIC_REASON,
  type HostResolver,
} from '../src/adapters/http/webhook-address.js';
import {
  judgeAddress,
  parseIPv6,
  webhookUrlPolicyOf,
  type WebhookUrlPolicy,
} from '../src/domain/webhooks/url-policy.js';

/*
 * Which webhook URLs the service may POST to, judged without connecting anywhere: names are
 * resolved by an injected resolver (a table), IP literals are not resolved at all, and every URL
 * here is only parsed. The default resolver is never called for a name in this file.
 */

const PRODUCTION: WebhookUrlPolicy = { allowLoopback: false, requireHttps: true };
const DEVELOPMENT: WebhookUrlPolicy = { allowLoopback: true, requireHttps: false };
const DEV_NO_LOOPBACK: WebhookUrlPolicy = { allowLoopback: false, requireHttps: false };

/** A resolver from a table; a name missing from it fails as getaddrinfo does. */
function resolver(table: Record<string, string[]>): HostResolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = (hostname: string) => {
    asked.push(hostname);
    const found = table[hostname];
    if (!found)
      return Promise.reject(
        Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }),
      );
    return Promise.resolve(found);
  };
  return Object.assign(resolve, { asked });
}

/** A resolver that fails the test if it is ever called (IP literals are judged as they are). */
const neverResolve: HostResolver = (hostname) => {
  throw new Error(`resolved ${hostname}: IP literals must not be looked up`);
};

async function reasonFor(url: string, policy = PRODUCTION, resolve: HostResolver = neverResolve) {
  const verdict = await checkWebhookUrl(url, policy, resolve);
  expect(verdict.ok, `${url} should be refused`).toBe(false);
  return verdict.ok ? '' : verdict.reason;
}

describe('addresses', () => {
  const refusedV4: Array<[string, RegExp]> = [
    ['127.0.0.1', /loopback.*127\.0\.0\.0\/8/],
    ['127.255.255.254', /loopback/],
    ['10.0.0.5', /private.*10\.0\.0\.0\/8/],
    ['172.16.0.1', /private.*172\.16\.0\.0\/12/],
    ['172.31.255.255', /private/],
    ['192.168.1.1', /private.*192\.168\.0\.0\/16/],
    ['169.254.169.254', /link-local \(cloud metadata\).*169\.254\.0\.0\/16/],
    ['169.254.0.1', /link-local/],
    ['100.64.0.1', /carrier-grade NAT.*100\.64\.0\.0\/10/],
    ['100.127.255.255', /carrier-grade NAT/],
    ['0.0.0.0', /unspecified/],
    ['0.1.2.3', /unspecified/],
    ['224.0.0.1', /multicast/],
    ['239.255.255.250', /multicast/],
    ['240.0.0.1', /reserved/],
    ['255.255.255.255', /reserved/],
    ['192.0.2.10', /reserved/],
    ['198.18.0.1', /reserved/],
    ['198.51.100.7', /reserved/],
    ['203.0.113.9', /reserved/],
    ['192.0.0.8', /reserved/],
  ];
  test.each(refusedV4)('IPv4 %s is refused', (address, reason) => {
    const verdict = judgeAddress(address, PRODUCTION);
    expect(verdict.ok).toBe(false);
    expect(verdict.ok ? '' : verdict.reason).toMatch(reason);
  });

  const refusedV6: Array<[string, RegExp]> = [
    ['::1', /loopback.*::1\/128/],
    ['::', /unspecified/],
    ['fe80::1', /link-local.*fe80::\/10/],
    ['febf:ffff::1', /link-local/],
    ['fc00::1', /unique-local.*fc00::\/7/],
    ['fd12:3456:789a::1', /unique-local/],
    ['ff02::1', /multicast/],
    ['fec0::1', /reserved/],
    ['2001:db8::1', /reserved.*2001:db8::\/32/],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /reserved.*2001::\/23/],
    ['100::1', /reserved/],
    ['64:ff9b:1::a00:5', /reserved/],
    ['::7f00:1', /IPv4-compatible/],
    ['1234::1', /outside 2000::\/3/],
    // IPv4-mapped: judged as the IPv4 address inside, in either spelling.
    ['::ffff:10.0.0.5', /IPv4-mapped 10\.0\.0\.5.*private/],
    ['::ffff:a00:5', /IPv4-mapped 10\.0\.0\.5.*private/],
    ['::ffff:169.254.169.254', /IPv4-mapped 169\.254\.169\.254.*link-local/],
    ['::ffff:7f00:1', /IPv4-mapped 127\.0\.0\.1.*loopback/],
    ['0:0:0:0:0:ffff:c0a8:101', /IPv4-mapped 192\.168\.1\.1/],
    // NAT64 and 6to4 carry an IPv4 address: a private one inside is refused.
    ['64:ff9b::a9fe:a9fe', /NAT64 of 169\.254\.169\.254.*link-local/],
    ['64:ff9b::10.1.2.3', /NAT64 of 10\.1\.2\.3/],
    ['2002:a00:5::1', /6to4 of 10\.0\.0\.5.*private/],
    ['2002:7f00:1::', /6to4 of 127\.0\.0\.1/],
  ];
  test.each(refusedV6)('IPv6 %s is refused', (address, reason) => {
    const verdict = judgeAddress(address, PRODUCTION);
    expect(verdict.ok).toBe(false);
    expect(verdict.ok ? '' : verdict.reason).toMatch(reason);
  });

  test.each([
    '93.184.215.14',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '169.255.0.1',
    '223.255.255.255',
  ])('public IPv4 %s passes', (address) =>
    expect(judgeAddress(address, PRODUCTION)).toEqual({ ok: true, loopback: false }),
  );

  test.each([
    '2606:4700:4700::1111',
    '2a00:1450:4001:81c::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('public IPv6 %s passes', (address) =>
    expect(judgeAddress(address, PRODUCTION)).toEqual({ ok: true, loopback: false }),
  );

  test('loopback passes only when the policy allows it; tunnelled loopback never does', () => {
    for (const address of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) {
      expect(judgeAddress(address, DEVELOPMENT), address).toEqual({ ok: true, loopback: true });
      expect(judgeAddress(address, DEV_NO_LOOPBACK).ok, address).toBe(false);
    }
    for (const address of ['2002:7f00:1::', '64:ff9b::7f00:1', '10.0.0.1', '169.254.169.254', 'fe80::1']) {
      expect(judgeAddress(address, DEVELOPMENT).ok, address).toBe(false);
    }
  });

  test('what is not an address is refused', () => {
    for (const text of [
      '',
      'example.com',
      '1.2.3',
      '1.2.3.256',
      '01.2.3.4',
      '1::2::3',
      ':1::',
      '12345::1',
      'g::1',
    ]) {
      expect(judgeAddress(text, DEVELOPMENT).ok, JSON.stringify(text)).toBe(false);
    }
  });

  test('IPv6 text is read in every spelling', () => {
    expect(parseIPv6('::')).toBe(0n);
    expect(parseIPv6('::1')).toBe(1n);
    expect(parseIPv6('0:0:0:0:0:0:0:1')).toBe(1n);
    expect(parseIPv6('::ffff:1.2.3.4')).toBe(parseIPv6('::ffff:102:304'));
    expect(parseIPv6('fe80::1%eth0')).toBe(parseIPv6('fe80::1'));
    expect(parseIPv6('1:2:3:4:5:6:7:8:9')).toBeUndefined();
    expect(parseIPv6('1:2:3:4:5:6:7::8')).toBeUndefined();
    expect(parseIPv6('1.2.3.4::')).toBeUndefined();
  });
});

describe('URLs', () => {
  test('the policy: loopback unset means allowed outside production; https in production', () => {
    expect(webhookUrlPolicyOf({ production: true, allowLoopback: undefined })).toEqual(PRODUCTION);
    expect(webhookUrlPolicyOf({ production: false, allowLoopback: undefined })).toEqual(DEVELOPMENT);
    expect(webhookUrlPolicyOf({ production: false, allowLoopback: false })).toEqual(DEV_NO_LOOPBACK);
    expect(webhookUrlPolicyOf({ production: true, allowLoopback: true })).toEqual({
      allowLoopback: true,
      requireHttps: true,
    });
  });

  test('in production plain http is refused before any lookup', async () => {
    const resolve = resolver({ 'hooks.example.com': ['93.184.215.14'] });
    expect(await reasonFor('http://hooks.example.com/in', PRODUCTION, resolve)).toMatch(/must be https/);
    expect(await reasonFor('http://93.184.215.14/in', PRODUCTION)).toMatch(/must be https/);
    expect(resolve.asked).toEqual([]);
    const https = await checkWebhookUrl('https://hooks.example.com/in', PRODUCTION, resolve);
    expect(https).toMatchObject({ ok: true, addresses: ['93.184.215.14'] });
    expect(https.ok && https.url.href).toBe('https://hooks.example.com/in');
  });

  test('outside production http to a public host is allowed', async () => {
    const resolve = resolver({ 'hooks.example.com': ['93.184.215.14'] });
    expect(await checkWebhookUrl('http://hooks.example.com/in', DEVELOPMENT, resolve)).toMatchObject({
      ok: true,
    });
  });

  test('loopback (with http) only when the policy allows it, in production too when set', async () => {
    for (const url of ['http://127.0.0.1:9/hook', 'http://[::1]:9/hook', 'http://[::ffff:127.0.0.1]/hook']) {
      expect(await checkWebhookUrl(url, DEVELOPMENT, neverResolve), url).toMatchObject({ ok: true });
      expect(await reasonFor(url, DEV_NO_LOOPBACK), url).toMatch(/loopback/);
      expect(await reasonFor(url, PRODUCTION), url).toMatch(/must be https/);
      expect(
        await checkWebhookUrl(url, { allowLoopback: true, requireHttps: true }, neverResolve),
        url,
      ).toMatchObject({ ok: true });
    }
    const localhost = resolver({ localhost: ['127.0.0.1', '::1'] });
    expect(await checkWebhookUrl('http://localhost:9/hook', DEVELOPMENT, localhost)).toMatchObject({
      ok: true,
      addresses: ['127.0.0.1', '::1'],
    });
    expect(await reasonFor('http://localhost:9/hook', DEV_NO_LOOPBACK, localhost)).toMatch(/loopback/);
  });

  test('http in production is refused for a name resolving to loopback and a public address', async () => {
    const both = resolver({ 'mixed.example.com': ['93.184.215.14', '127.0.0.1'] });
    expect(
      await reasonFor('http://mixed.example.com/', { allowLoopback: true, requireHttps: true }, both),
    ).toMatch(/must be https/);
  });

  test('every spelling of an IPv4 literal is normalised by URL parsing, then judged', async () => {
    for (const url of [
      'http://2130706433/', // 127.0.0.1 as one decimal number
      'http://0x7f000001/',
      'http://0x7f.0.0.1/',
      'http://0177.0.0.1/', // octal
      'http://0177.1/',
      'http://127.1/',
      'http://127.000.000.001/',
    ]) {
      expect(await reasonFor(url, DEV_NO_LOOPBACK), url).toMatch(/127\.0\.0\.1 is a loopback/);
    }
    expect(await reasonFor('http://0xa9fea9fe/', DEVELOPMENT)).toMatch(/169\.254\.169\.254 is a link-local/);
    expect(await reasonFor('http://3232235777/', DEVELOPMENT)).toMatch(/192\.168\.1\.1 is a private/);
    expect(await reasonFor('http://012.0.0.5/', DEVELOPMENT)).toMatch(/10\.0\.0\.5 is a private/);
    expect(await reasonFor('http://0/', DEVELOPMENT)).toMatch(/0\.0\.0\.0 is an unspecified/);
    expect(await reasonFor('http://[::ffff:169.254.169.254]/', DEVELOPMENT)).toMatch(
      /IPv4-mapped 169\.254\.169\.254/,
    );
    expect(await reasonFor('http://[0:0:0:0:0:ffff:a00:5]/', DEVELOPMENT)).toMatch(/IPv4-mapped 10\.0\.0\.5/);
    expect(await reasonFor('http://[fd00::1]/', DEVELOPMENT)).toMatch(/unique-local/);
    expect(await reasonFor('http://[fe80::1]/', DEVELOPMENT)).toMatch(/link-local/);
    expect(await reasonFor('http://[::]/', DEVELOPMENT)).toMatch(/unspecified/);
  });

  test('a name resolving to a private address, or to a public one and loopback, is refused', async () => {
    const resolve = resolver({
      'internal.example.com': ['10.0.0.5'],
      'rebind.example.com': ['93.184.215.14', '127.0.0.1'],
      'v6.example.com': ['2606:4700:4700::1111', 'fd00::5'],
      'metadata.example.com': ['169.254.169.254'],
      'mapped.example.com': ['::ffff:10.0.0.5'],
    });
    // Refused even where loopback is allowed for the rebinding name: the sender might be handed
    // either address, and a public name that also answers 127.0.0.1 is how a rebinding attack
    // reaches us. The reason names the rule, never what the name resolved to (issue 49).
    for (const [url, policy] of [
      ['https://internal.example.com/hook', PRODUCTION],
      ['https://rebind.example.com/hook', PRODUCTION],
      ['https://v6.example.com/hook', PRODUCTION],
      ['https://metadata.example.com/', DEVELOPMENT],
      ['https://mapped.example.com/', DEVELOPMENT],
    ] as const) {
      const reason = await reasonFor(url, policy, resolve);
      expect(reason, url).toBe(NOT_PUBLIC_REASON);
      expect(reason, url).toMatch(/private address/);
      expect(reason, url).not.toMatch(/\d+\.\d+\.\d+\.\d+|[0-9a-f]*::[0-9a-f]*/);
    }
    expect(resolve.asked).toEqual([
      'internal.example.com',
      'rebind.example.com',
      'v6.example.com',
      'metadata.example.com',
      'mapped.example.com',
    ]);
  });

  test('a name that does not resolve, or resolves to nothing, is refused as a private one is', async () => {
    const resolve = resolver({ 'empty.example.com': [], 'internal.example.com': ['10.0.0.5'] });
    const missing = await reasonFor('https://missing.example.com/', PRODUCTION, resolve);
    expect(missing).toMatch(/does not resolve/);
    expect(missing).not.toMatch(/ENOTFOUND|getaddrinfo|missing\.example\.com/);
    // The same words: probing names tells nothing of which exist inside our network.
    expect(await reasonFor('https://empty.example.com/', PRODUCTION, resolve)).toBe(missing);
    expect(await reasonFor('https://internal.example.com/', PRODUCTION, resolve)).toBe(missing);
    const broken: HostResolver = () =>
      Promise.reject(Object.assign(new Error('getaddrinfo EAI_AGAIN x'), { code: 'EAI_AGAIN' }));
    const unresolved = await reasonFor('https://flaky.example.com/', PRODUCTION, broken);
    expect(unresolved).toMatch(/could not be resolved/);
    expect(unresolved).not.toMatch(/EAI_AGAIN|getaddrinfo/);
  });

  test('what is not an http(s) URL without credentials is refused before any lookup', async () => {
    const resolve = resolver({ 'hooks.example.com': ['93.184.215.14'] });
    expect(await reasonFor('hooks.example.com/in', DEVELOPMENT, resolve)).toMatch(/not an absolute URL/);
    expect(await reasonFor('ftp://hooks.example.com/in', DEVELOPMENT, resolve)).toMatch(
      /scheme must be https or http, not ftp/,
    );
    expect(await reasonFor('file:///etc/passwd', DEVELOPMENT, resolve)).toMatch(/not file/);
    expect(await reasonFor('gopher://127.0.0.1:6379/_INFO', DEVELOPMENT, resolve)).toMatch(/not gopher/);
    expect(await reasonFor('https://user:pass@hooks.example.com/in', DEVELOPMENT, resolve)).toMatch(
      /credentials/,
    );
    expect(await reasonFor('https://user@hooks.example.com/in', DEVELOPMENT, resolve)).toMatch(/credentials/);
    expect(await reasonFor('https://hooks.example.com:0/in', DEVELOPMENT, resolve)).toMatch(/port 0/);
    expect(await reasonFor(`https://hooks.example.com/${'a'.repeat(2_100)}`, DEVELOPMENT, resolve)).toMatch(
      /longer than 2048/,
    );
    expect(resolve.asked).toEqual([]);
  });
});
