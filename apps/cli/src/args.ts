/** Minimal `--flag value` / `--switch` parser; unknown or repeated flags are the caller's to refuse. */
export interface ParsedArgs {
  command: string | undefined;
  options: Record<string, string | true>;
  json: boolean;
  errors: string[];
}

export function parseArgs(argv: string[], switches: ReadonlySet<string>): ParsedArgs {
  const [command, ...rest] = argv;
  const options: Record<string, string | true> = {};
  const errors: string[] = [];
  let json = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (!arg.startsWith('--')) {
      errors.push(`unexpected argument "${arg}"`);
      continue;
    }
    const [flag, inline] = arg.slice(2).split(/=(.*)/s, 2);
    if (flag === 'json') {
      json = true;
      continue;
    }
    if (flag in options) errors.push(`--${flag} given twice`);
    if (switches.has(flag)) {
      options[flag] = true;
    } else if (inline !== undefined) {
      options[flag] = inline;
    } else if (i + 1 < rest.length && !rest[i + 1].startsWith('--')) {
      options[flag] = rest[++i];
    } else {
      errors.push(`--${flag} needs a value`);
    }
  }
  return { command, options, json, errors };
}
