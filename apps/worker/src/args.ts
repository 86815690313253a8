/**
 * `--ops-port N` (or `--ops-port=N`) on the worker's command line: the value for WORKER_OPS_PORT,
 * validated with the rest of the config. Returns undefined when the flag is absent.
 */
export function opsPortFlag(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--ops-port') return argv[i + 1] ?? '';
    if (arg.startsWith('--ops-port=')) return arg.slice('--ops-port='.length);
  }
  return undefined;
}
