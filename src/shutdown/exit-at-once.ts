/** How long the log may take to write its last lines before the process ends anyway. */
const FLUSH_MS = 500;

/**
 * Ends the process at once, for an exit that must not wait (a second Ctrl-C). Not process.exit():
 * Node's exit stops every worker thread and joins it, and a thread caught where termination does
 * not reach it (blocked in native code, as in a synchronous child process) held a forced exit far
 * past "at once" (CI, 2026-11-27: the main thread still in futex_do_wait 10 s after the second
 * Ctrl-C, the embedded Postgres already gone; an earlier run took 303 s). The log gets
 * FLUSH_MS to write what is pending (pino's pretty transport writes from a thread of its own),
 * then the process sends itself SIGKILL, which nothing can hold. The caller has already done what
 * exit handlers would have: told the embedded servers to stop, put the terminal back.
 */
export function exitAtOnce(log: { flush(): void }): void {
  // The whole FLUSH_MS, not flush's callback: pino's transport calls back once its thread has
  // read the lines, before pino-pretty has written them (a CI run lost the last line that way).
  log.flush();
  setTimeout(() => process.kill(process.pid, 'SIGKILL'), FLUSH_MS);
}
