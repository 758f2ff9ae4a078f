/**
 * The repository is self-contained: no file cites documents that do not ship with it (the
 * vendor's specification, design notes kept elsewhere), nor an absolute path of a build
 * machine; code cites sections of `docs/` instead (docs/upstream.md for the upstream API).
 * Every cited section of docs/upstream.md exists.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../helpers/cli.js';

const SELF = 'test/unit/docs/citations.test.ts';
/** Tracked text files of the repository (the lock file aside). */
const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
  .split('\0')
  .filter(
    (f) =>
      f !== '' &&
      f !== SELF &&
      f !== 'package-lock.json' &&
      /\.(ts|js|mjs|md|sql|ya?ml|json|csv|sh|txt)$|^Makefile$|^Dockerfile$|^deploy\//.test(f),
  );
const text = (f: string): string => {
  try {
    return readFileSync(join(ROOT, f), 'utf8');
  } catch {
    return ''; // deleted in the work tree
  }
};

/** Names of documents that are not in the repository. */
const FOREIGN = [
  /\bDESIGN\.md\b/,
  /\bDOMAIN\.md\b/,
  /\bRELIABILITY\.md\b/,
  /\bSTYLE\.md\b/,
  /upstream-interface-spec/,
  /\bspec §/,
  /\.\.\/shared\//,
];

describe('self-contained docs', () => {
  it('finds the files it checks', () => {
    expect(files).toContain('README.md');
    expect(files).toContain('src/cli/main.ts');
    expect(files.some((f) => f.startsWith('sql/models/'))).toBe(true);
  });

  it('no file cites DESIGN.md, DOMAIN.md, RELIABILITY.md, STYLE.md, the vendor spec ("spec §") or ../shared', () => {
    const hits = files.flatMap((f) =>
      text(f)
        .split('\n')
        .flatMap((line, i) => (FOREIGN.some((re) => re.test(line)) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(hits).toEqual([]);
    expect(FOREIGN.some((re) => re.test('see spec §4.3'))).toBe(true); // the check can fail
  });

  it('no absolute path of a build machine in docs/ or the README', () => {
    const machine = /(^|[\s`'"(])\/(work|home|Users|root|builds?|runner|tmp)\/[\w.-]/;
    const hits = files
      .filter((f) => f === 'README.md' || f.startsWith('docs/'))
      .flatMap((f) =>
        text(f)
          .split('\n')
          .flatMap((line, i) => (machine.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
      );
    expect(hits).toEqual([]);
  });

  it('every cited section of docs/upstream.md exists', () => {
    const headings = new Set([...text('docs/upstream.md').matchAll(/^#+ (.+)$/gm)].map((m) => m[1]!.trim()));
    const cited = new Set<string>();
    for (const f of files) {
      for (const m of text(f).matchAll(/docs\/upstream\.md((?: ?,? ?"[^"\n]+")+)/g)) {
        for (const s of m[1]!.matchAll(/"([^"\n]+)"/g)) cited.add(s[1]!);
      }
    }
    expect(cited.size).toBeGreaterThan(5);
    expect([...cited].filter((s) => !headings.has(s))).toEqual([]);
  });
});
