import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startLocalnet, type Localnet } from '../../localnet/localnet.js';
import { rpcPacingFor } from './cluster.js';
import { createRpcClient } from './rpc-client.js';

describe('rpcPacingFor', () => {
  test('our validators are polled fast and uncapped; public ones once a second under 8 requests/s', () => {
    expect(rpcPacingFor('localnet')).toEqual({
      pollMs: 100,
      processedPollMs: 10,
      maxRequestsPerSecond: 0,
      lookOnSend: true,
    });
    // A validator we run lands transactions in its slots, as public ones do: no look on send.
    expect(rpcPacingFor('local-validator')).toEqual({
      pollMs: 100,
      processedPollMs: 10,
      maxRequestsPerSecond: 0,
      lookOnSend: false,
    });
    expect(rpcPacingFor('devnet')).toEqual({
      pollMs: 1_000,
      processedPollMs: 400,
      maxRequestsPerSecond: 8,
      lookOnSend: false,
    });
    expect(rpcPacingFor('testnet').maxRequestsPerSecond).toBe(8);
  });

  test('settings override the defaults; the waited-on poll is never slower than the full one', () => {
    expect(rpcPacingFor('devnet', { pollMs: 250, maxRequestsPerSecond: 0 })).toEqual({
      pollMs: 250,
      processedPollMs: 250,
      maxRequestsPerSecond: 0,
      lookOnSend: false,
    });
    expect(rpcPacingFor('localnet', { pollMs: 50 }).processedPollMs).toBe(10);
  });
});

describe('RpcClient.limitRate', () => {
  let localnet: Localnet;
  beforeAll(async () => {
    localnet = await startLocalnet({ port: 0, slotMs: 100 });
  });
  afterAll(async () => {
    await localnet?.close();
  });

  test('spaces requests evenly at the cap, and 0 lifts it', async () => {
    const rpc = createRpcClient(localnet.rpcUrl);
    rpc.limitRate(20); // 50 ms apart
    const started = Date.now();
    await Promise.all(Array.from({ length: 11 }, () => rpc.call('getSlot', [])));
    expect(Date.now() - started).toBeGreaterThanOrEqual(480);
    rpc.limitRate(0);
    const free = Date.now();
    await Promise.all(Array.from({ length: 11 }, () => rpc.call('getSlot', [])));
    expect(Date.now() - free).toBeLessThan(480);
  });
});
