/**
 * The yargs side of the options: each command declares the options its entries in
 * {@link ConfigSchema} list for it (src/config/config.ts; `mock-api` is the simulator's own CLI),
 * and nothing else, so `status --help` shows and accepts only what `status` reads. yargs
 * parses the flags only: the `RECRUIT_ETL_*` variables and the `--config` file are merged by
 * `gatherOptions` (flags > environment > config file > defaults) in src/cli/context.ts.
 * To add an option, add its entry to {@link ConfigSchema}; nothing here changes.
 *
 * @module
 */
import type { Argv, Options } from 'yargs';
import { ConfigSchema, OPTION_GROUPS, OPTIONS, optionsFor, type CommandName, type OptionSpec } from '../config/config.js';
import { EXIT_CODE_HELP } from '../errors.js';

/** The help text under every command's options: where values come from, and the exit codes. */
export const HELP_EPILOGUE: string = [
  'Every option is also the environment variable shown as [env …] and a key of the --config',
  'JSON file (kebab-case). Precedence: flags, then environment, then the config file, then the',
  'defaults. Unknown RECRUIT_ETL_* variables are reported in one warning and ignored.',
  '',
  'Exit codes (docs/contracts.md "Exit codes"):',
  ...EXIT_CODE_HELP.map(([code, meaning]) => `  ${code.padEnd(8)}${meaning}`),
].join('\n');

/** The yargs declaration of one option. */
function yargsOption(spec: OptionSpec): Options {
  const opt: Options = {
    type: spec.type,
    describe: `${spec.describe} [env ${spec.env}]`,
    hidden: spec.hidden,
  };
  if (spec.array) opt.array = true;
  // Shown, never applied by yargs: an absent flag must stay absent so that the environment
  // and the config file can give the value (the schema's default applies last).
  if (spec.defaultHelp !== undefined) opt.defaultDescription = spec.defaultHelp;
  return opt;
}

/**
 * Declare `specs` on `y`, grouped under their `--help` headings, with the epilogue.
 */
export function declareOptions<T>(y: Argv<T>, specs: readonly OptionSpec[]): Argv<T> {
  let b = y;
  for (const spec of specs) b = b.option(spec.flag, yargsOption(spec)) as Argv<T>;
  for (const group of OPTION_GROUPS) {
    const names = specs.filter((s) => s.group === group && !s.hidden).map((s) => s.flag);
    if (names.length > 0) b = b.group(names, group);
  }
  return b.epilogue(HELP_EPILOGUE);
}

/** Declare the options of `command` (its entries of {@link ConfigSchema}). */
export function commandOptions<T>(y: Argv<T>, command: CommandName): Argv<T> {
  return declareOptions(y, optionsFor(command));
}

/**
 * Every variable some command of the job reads: one per option of the schema. The same in
 * every install: `mock-api` (a development package) adds its own while it runs
 * (src/cli/commands/mockApi.ts).
 */
export const KNOWN_VARIABLES: ReadonlySet<string> = new Set(OPTIONS.map((o) => o.env));

/** Every option key some command takes: what a `--config` file may hold. */
export const KNOWN_KEYS: ReadonlySet<string> = new Set(Object.keys(ConfigSchema.shape));
