#!/usr/bin/env node
// Read a DuckLake from a second process, as an analyst would (make demo-lake; docs/lakehouse.md).
// Usage: node scripts/lake-query.mjs '<attach string>' 'SQL' ['SQL' …]: the lake is attached
// read-only as `lake`; each statement's rows are printed as a table.
import { existsSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const [attach, ...statements] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
if (existsSync('.duckdb/extensions')) await c.run("set extension_directory = '.duckdb/extensions'");
await c.run('load ducklake');
await c.run('load postgres');
await c.run(`attach '${attach.replaceAll("'", "''")}' as lake (read_only)`);
for (const sql of statements) {
  const r = await c.runAndReadAll(sql);
  console.log(`lake> ${sql}`);
  const rows = r.getRowObjectsJson();
  console.table(rows);
}
