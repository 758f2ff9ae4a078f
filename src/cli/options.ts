/**
 * The yargs option declarations shared by the commands (docs/contracts.md "Options").
 * Every option is also `RECRUIT_ETL_<OPTION_IN_UPPER_SNAKE>` through yargs' `.env()`.
 *
 * @module
 */
import type { Argv } from 'yargs';
import { DEFAULT_EVENT_TYPES } from '../config/config.js';
import { EXTRACT_SETTINGS } from '../pipeline/jobs.js';

/**
 * Every option of the contract, declared once for all commands (grouped in --help), so
 * that `RECRUIT_ETL_*` variables meant for one command never trip strict parsing in
 * another; a misspelt flag is still an error.
 */
export function allOptions<T>(y: Argv<T>) {
  return exportOptions(modelOptions(siteOptions(eventOptions(globalOptions(y)))))
    .group(['db', 'environment', 'memory-limit', 'log-level', 'verbose', 'config'], 'Warehouse and logs:')
    .group(['base-url', 'auth-url', 'client-id', 'client-secret', 'client-secret-file', 'audience', 'trial-id', 'event-type', 'page-size', 'batch-pages', 'max-empty-pages', 'body-timeout', 'max-retry-after', 'deadline'], 'Upstream (extract):')
    .group(['microsite-id', 'origin'], 'Site list (sites):')
    .group(['site-names'], 'Models (transform):')
    .group(['export-dir'], 'Exports:');
}

/** Options every command accepts. */
export function globalOptions<T>(y: Argv<T>) {
  return y
    .option('db', { type: 'string', describe: 'DuckDB warehouse file', default: 'data/warehouse.duckdb' })
    .option('environment', { type: 'string', describe: 'environment label recorded on streams and runs (staging, production)', default: 'production' })
    .option('memory-limit', { type: 'string', describe: `DuckDB memory_limit for transform and export (the extract runs under ${EXTRACT_SETTINGS['memory_limit']})`, default: '2GB' })
    .option('log-level', { type: 'string', describe: 'fatal|error|warn|info|debug|trace|silent', default: 'info' })
    .option('verbose', { type: 'boolean', describe: 'stack traces on failure, debug logs', default: false })
    // Read by src/failpoints.ts from RECRUIT_ETL_FAILPOINT (crash tests only); declared so that
    // strict parsing of RECRUIT_ETL_* variables does not refuse it.
    .option('failpoint', { type: 'string', hidden: true, describe: 'tests only: <name>:<n> SIGKILLs the process (src/failpoints.ts)' });
}

/** Options of the commands that read the events endpoint. */
export function eventOptions<T>(y: Argv<T>) {
  return y
    .option('base-url', { type: 'string', describe: "API base URL, the spec's {base_url} (required)" })
    .option('auth-url', { type: 'string', describe: "token host, the spec's {auth_url}; POST {auth_url}/oauth/token (required)" })
    .option('client-id', { type: 'string', describe: 'OAuth 2.0 client id for this environment (required)' })
    .option('client-secret', { type: 'string', describe: 'client secret: prefer RECRUIT_ETL_CLIENT_SECRET or --client-secret-file' })
    .option('client-secret-file', { type: 'string', describe: 'file holding the client secret (systemd credentials, Kubernetes secrets)' })
    .option('audience', { type: 'string', describe: 'OAuth 2.0 audience of the API (required)' })
    .option('trial-id', { type: 'string', array: true, describe: 'trial id, repeatable or comma-separated (required)' })
    .option('event-type', { type: 'string', array: true, describe: `event type, repeatable or comma-separated (default: ${DEFAULT_EVENT_TYPES.join(', ')})` })
    .option('page-size', { type: 'number', describe: "events per page (limit) on a new stream's first request; default: the server's" })
    .option('batch-pages', { type: 'number', describe: 'pages per commit, at most (events and cursor commit together); a batch also ends at 12 MiB of pages, or once it fills DuckDB row groups', default: 1000 })
    .option('max-empty-pages', { type: 'number', describe: 'empty pages in a row, hasNextPage true, before the run stops with exit 6', default: 1000 })
    .option('body-timeout', { type: 'number', describe: 'longest time, seconds, for a response body to arrive whole; then retried (exit 4 when retries are spent)', default: 120 })
    .option('max-retry-after', { type: 'number', describe: 'longest Retry-After honoured, seconds; longer fails with exit 4', default: 120 })
    .option('deadline', { type: 'number', describe: 'deadline for all upstream calls of the run, seconds' });
}

/** Options of the commands that read the site list. */
export function siteOptions<T>(y: Argv<T>) {
  return y
    .option('microsite-id', { type: 'string', describe: 'study-website (microsite) id (required for sites)' })
    .option('origin', { type: 'string', describe: 'Origin header the site list is authorized by (required for sites)' });
}

/** Options of the commands that build the models. */
export function modelOptions<T>(y: Argv<T>) {
  return y.option('site-names', {
    type: 'string',
    describe: 'CSV of display names of event site ids (site_id,trial_id,site_name,sponsor_site_id), loaded as seed_site_names',
  });
}

/** Options of the commands that write exports. */
export function exportOptions<T>(y: Argv<T>) {
  return y.option('export-dir', { type: 'string', describe: 'Parquet export folder', default: 'data/exports' });
}
