import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

export interface TestS3Server {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  stop(): Promise<void>;
}

/** Starts test/support/s3-server.child.ts and waits for its port. */
export async function startTestS3Server(): Promise<TestS3Server> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/s3-server.child.ts'], {
    stdio: ['pipe', 'pipe', 'inherit'],
    // fauxqs loads node:sqlite, which warns that it is experimental on Node 22.
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
  });
  const lines = createInterface({ input: child.stdout });
  const first = await Promise.race([
    once(lines, 'line').then(([line]) => String(line)),
    once(child, 'exit').then(([code]) => {
      throw new Error(`the S3 test server exited (${String(code)}) before it listened`);
    }),
  ]);
  const { port } = JSON.parse(first) as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
