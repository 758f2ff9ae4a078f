import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import yargs, { type Argv } from 'yargs';
import {
  COMMAND_NAMES,
  gatherOptions,
  OPTIONS,
  optionsFor,
  readConfigFile,
  resolveConfig,
  unknownVariables,
} from '../../../src/config/config.js';
import { commandOptions, KNOWN_KEYS, KNOWN_VARIABLES } from '../../../src/cli/options.js';
import { ConfigError, EXIT_CODE_HELP } from '../../../src/errors.js';
import { ROOT } from '../../helpers/cli.js';

const contracts = readFileSync(join(ROOT, 'docs', 'contracts.md'), 'utf8');

describe('options declared once in the schema', () => {
  it('every option has a flag, a variable, a description and at least one command', () => {
    for (const o of OPTIONS) {
      expect(o.env).toBe(`RECRUIT_ETL_${o.flag.replaceAll('-', '_').toUpperCase()}`);
      expect(o.describe.length).toBeGreaterThan(3);
      expect(o.commands.length).toBeGreaterThan(0);
    }
  });

  it('docs/contracts.md "Options" lists every visible option', () => {
    const section = contracts.slice(contracts.indexOf('## Options'), contracts.indexOf('## Exit codes'));
    for (const o of OPTIONS.filter((x) => !x.hidden)) expect(section, o.flag).toContain(`\`--${o.flag}\``);
  });

  it('docs/contracts.md "Exit codes" and --help list the same codes', () => {
    const section = contracts.slice(contracts.indexOf('## Exit codes'), contracts.indexOf('## Warehouse tables'));
    const documented = [...section.matchAll(/^\| (\d+(?: \/ \d+)?) \|/gm)].map((m) => m[1]!.replace(' / ', '/'));
    expect(EXIT_CODE_HELP.map(([code]) => code)).toEqual(documented);
  });

  it('defaults are written once: the schema gives them to resolveConfig and to --help', () => {
    const c = resolveConfig({});
    const byKey = new Map(OPTIONS.map((o) => [o.key, o]));
    expect(byKey.get('memoryLimit')!.defaultHelp).toBe(c.memoryLimit);
    expect(byKey.get('batchPages')!.defaultHelp).toBe(String(c.batchPages));
    expect(byKey.get('maxRetryAfter')!.defaultHelp).toBe(String(c.maxRetryAfter));
    expect(byKey.get('bodyTimeout')!.defaultHelp).toBe(String(c.bodyTimeout));
  });

  it('each command takes only its own options', async () => {
    const parse = async (command: (typeof COMMAND_NAMES)[number], args: string[]) =>
      commandOptions(
        yargs(args)
          .strictOptions()
          .exitProcess(false)
          .fail((msg) => {
            throw new Error(msg);
          }) as Argv,
        command,
      ).parseAsync();
    expect(optionsFor('status').map((o) => o.flag)).not.toContain('client-secret');
    await expect(parse('status', ['--client-secret', 'x'])).rejects.toThrow(/Unknown argument/);
    await expect(parse('transform', ['--trial-id', 'x'])).rejects.toThrow(/Unknown argument/);
    await expect(parse('extract', ['--trial-id', 'x', '--page-size', '5'])).resolves.toMatchObject({ trialId: ['x'], pageSize: 5 });
    // yargs applies no default: an absent flag leaves room for the variable and the file.
    expect((await parse('run', []))['memoryLimit']).toBeUndefined();
  });

  it('precedence: flags > environment > --config file > defaults', () => {
    const specs = optionsFor('extract');
    const raw = gatherOptions(specs, {
      flags: { batchPages: 7 },
      env: { RECRUIT_ETL_BATCH_PAGES: '8', RECRUIT_ETL_MEMORY_LIMIT: '1GB', RECRUIT_ETL_DB: '' },
      file: { batchPages: 9, memoryLimit: '3GB', maxEmptyPages: 11, db: 'from-file.duckdb' },
    });
    const c = resolveConfig(raw);
    expect(c.batchPages).toBe(7);
    expect(c.memoryLimit).toBe('1GB');
    expect(c.maxEmptyPages).toBe(11);
    expect(c.db).toBe('from-file.duckdb');
    expect(c.bodyTimeout).toBe(120);
  });

  it('--lake-pipeline-moved and --yes only on the command line: from the environment or the --config file they are exit 2', () => {
    const specs = [...optionsFor('publish'), ...optionsFor('streams')];
    expect(gatherOptions(specs, { flags: { lakePipelineMoved: true, yes: true } })).toMatchObject({ lakePipelineMoved: true, yes: true });
    const refused = (sources: Parameters<typeof gatherOptions>[1]) => {
      try {
        gatherOptions(specs, sources);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as ConfigError).exitCode).toBe(2);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused({ flags: {}, env: { RECRUIT_ETL_LAKE_PIPELINE_MOVED: 'true' } })).toMatch(
      /^--lake-pipeline-moved .*RECRUIT_ETL_LAKE_PIPELINE_MOVED.*give it on the command line, once/,
    );
    // Also with the flag given: the variable would stay set for the next command.
    expect(refused({ flags: { yes: true }, env: { RECRUIT_ETL_YES: '1' } })).toMatch(
      /^--yes .*RECRUIT_ETL_YES.*give it on the command line, once/,
    );
    expect(refused({ flags: {}, file: { lakePipelineMoved: false } })).toMatch(
      /^--lake-pipeline-moved .*--config file.*give it on the command line, once/,
    );
    expect(refused({ flags: {}, file: { yes: true } })).toMatch(/^--yes .*--config file/);
    // An empty variable counts as unset.
    expect(gatherOptions(specs, { flags: {}, env: { RECRUIT_ETL_YES: '' } })).not.toHaveProperty('yes');
  });

  it('unknown RECRUIT_ETL_* variables are listed, known ones of any command are not', () => {
    const env = {
      RECRUIT_ETL_SERVICE_HOST: '10.0.0.1',
      RECRUIT_ETL_PORT: 'tcp://10.0.0.1:80',
      RECRUIT_ETL_DB: 'x',
      RECRUIT_ETL_SEED: '3',
      RECRUIT_ETL_FAILPOINT: 'a:1',
      HOME: '/',
    };
    // The simulator's variables (RECRUIT_ETL_PORT, RECRUIT_ETL_SEED) are mock-api's, a development package: unknown to the job in every install.
    expect(unknownVariables(env, KNOWN_VARIABLES)).toEqual(['RECRUIT_ETL_PORT', 'RECRUIT_ETL_SEED', 'RECRUIT_ETL_SERVICE_HOST']);
  });

  it('a --config file: unknown keys and non-objects are exit 2 naming --config and its variable', () => {
    const read = (text: string) => () => readConfigFile('/etc/x.json', KNOWN_KEYS, () => text);
    expect(read('{"db":"a","page-size":3}')()).toEqual({ db: 'a', pageSize: 3 });
    // A key of the simulator's is no option of the job (the same with or without the package installed).
    for (const bad of ['{"dbb":"a"}', '{"db":"a","seed":1}', '[1]', 'nope', 'null']) {
      expect(read(bad)).toThrow(ConfigError);
      expect(read(bad)).toThrow(/--config \(RECRUIT_ETL_CONFIG\)/);
    }
    expect(() =>
      readConfigFile('/nope.json', KNOWN_KEYS, () => {
        throw Object.assign(new Error('x'), { code: 'ENOENT' });
      }),
    ).toThrow(/--config \(RECRUIT_ETL_CONFIG\): cannot read \/nope.json: no such file/);
  });

  it('a --config file that is not JSON is refused without quoting its text (the client secret was quoted before)', () => {
    const read = () => readConfigFile('/etc/x.json', KNOWN_KEYS, () => '{"client-secret":S3cretS3cret9}');
    expect(read).toThrow(/--config \(RECRUIT_ETL_CONFIG\): \/etc\/x.json is not valid JSON/);
    expect(read).not.toThrow(/S3cr|secret":/);
    expect(() => readConfigFile('/etc/x.json', KNOWN_KEYS, () => '{"db": "a",}')).toThrow(/is not valid JSON/);
  });

  it('a configured trial or microsite id that is not valid Unicode is exit 2 naming it (exit 1 before, when the URL was built)', () => {
    expect(() => resolveConfig({ trialId: ['t\ud800'] })).toThrow(/--trial-id \(RECRUIT_ETL_TRIAL_ID\): must be valid Unicode text/);
    expect(() => resolveConfig({ micrositeId: 'm\udc00' })).toThrow(
      /--microsite-id \(RECRUIT_ETL_MICROSITE_ID\): must be valid Unicode text/,
    );
  });

  it('every invalid value is named with its flag and variable', () => {
    expect(() => resolveConfig({ memoryLimit: 'lots' })).toThrow(/--memory-limit \(RECRUIT_ETL_MEMORY_LIMIT\): must be a DuckDB size/);
    for (const ok of ['2GB', '512MB', '1.5GiB', '4 GB', '100000000b', '3 gigabytes'])
      expect(resolveConfig({ memoryLimit: ok }).memoryLimit).toBe(ok);
    expect(() => resolveConfig({ batchPages: 'many' })).toThrow(/--batch-pages \(RECRUIT_ETL_BATCH_PAGES\)/);
    expect(() => resolveConfig({ logLevel: 'loud' })).toThrow(/--log-level \(RECRUIT_ETL_LOG_LEVEL\)/);
    expect(() => resolveConfig({ verbose: 'maybe' })).toThrow(/--verbose \(RECRUIT_ETL_VERBOSE\)/);
    expect(resolveConfig({ verbose: 'true' }).verbose).toBe(true);
  });
});
