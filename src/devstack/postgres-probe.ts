import pg from 'pg';

/** True when Postgres accepts a connection at `url` within `timeoutMs`. */
export async function postgresAnswers(url: string, timeoutMs = 1000): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}
