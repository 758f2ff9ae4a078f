// The size limits every function of src/ and packages/*/src/ keeps (README.md "Tests"): at most 80 lines, nesting
// at most 4 deep, cyclomatic complexity at most 30. `npm run lint`, part of `make test`.
// No function is exempt: split one that grows over a limit.
import tseslint from 'typescript-eslint';

export default tseslint.config({
  files: ['src/**/*.ts', 'packages/*/src/**/*.ts'],
  languageOptions: { parser: tseslint.parser },
  // Some files disable rules of a wider set this project does not turn on (no-control-regex).
  linterOptions: { reportUnusedDisableDirectives: 'off' },
  rules: {
    'max-lines-per-function': ['error', { max: 80 }],
    'max-depth': ['error', 4],
    complexity: ['error', 30],
  },
});
