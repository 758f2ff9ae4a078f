#!/usr/bin/env bash
# Fill the project-local DuckDB extension directory (.duckdb/extensions/v<version>/<platform>/)
# from the PyPI packages that ship the extensions, for machines that cannot reach DuckDB's
# extension host (docs/lakehouse.md "Extensions"). The packages and their version are read
# from package.json ("duckdbExtensions"), which must match the @duckdb/node-api pin's engine.
# Idempotent: a folder that already holds every extension is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

DEST_ROOT=${RECRUIT_ETL_EXTENSION_DIRECTORY:-.duckdb/extensions}
read -r VERSION PIN < <(node -p 'const p=require("./package.json"); p.duckdbExtensions.version + " " + p.dependencies["@duckdb/node-api"]')
# The engine version is the pin without its "-r.N" release suffix: 1.5.5-r.5 → 1.5.5.
if [[ "${PIN%%-*}" != "$VERSION" ]]; then
  echo "extensions: package.json pins @duckdb/node-api $PIN but duckdbExtensions.version $VERSION; they must match" >&2
  exit 2
fi
mapfile -t NAMES < <(node -p 'Object.keys(require("./package.json").duckdbExtensions.packages).join("\n")')
mapfile -t PACKAGES < <(node -p 'Object.values(require("./package.json").duckdbExtensions.packages).join("\n")')
# The platform folder DuckDB looks in (linux_amd64, linux_arm64, osx_arm64, …), asked of the engine itself.
PLATFORM=$(node --input-type=module -e 'import { DuckDBInstance } from "@duckdb/node-api"; const i = await DuckDBInstance.create(":memory:"); const c = await i.connect(); const r = await c.runAndReadAll("select platform from pragma_platform()"); console.log(r.getRows()[0][0]);')
DEST="$DEST_ROOT/v$VERSION/$PLATFORM"

missing=0
for n in "${NAMES[@]}"; do [[ -f "$DEST/$n.duckdb_extension" ]] || missing=1; done
if [[ $missing == 0 ]]; then
  echo "extensions: $DEST has ${NAMES[*]}"
  exit 0
fi

command -v python3 >/dev/null || { echo "extensions: python3 with pip is needed to fetch ${PACKAGES[*]}" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
specs=()
for p in "${PACKAGES[@]}"; do specs+=("$p==$VERSION"); done
echo "extensions: pip download ${specs[*]}"
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$WORK/wheels" "${specs[@]}"
mkdir -p "$DEST"
for w in "$WORK"/wheels/*.whl; do
  # A wheel is a zip: <module>/extensions/v<version>/<name>.duckdb_extension (no platform folder).
  python3 -m zipfile -e "$w" "$WORK/unpacked"
done
for n in "${NAMES[@]}"; do
  src=$(find "$WORK/unpacked" -path "*/extensions/v$VERSION/$n.duckdb_extension" -print -quit)
  if [[ -z "$src" ]]; then
    echo "extensions: no $n.duckdb_extension for v$VERSION in the downloaded wheels" >&2
    exit 1
  fi
  cp "$src" "$DEST/$n.duckdb_extension.part"
  mv "$DEST/$n.duckdb_extension.part" "$DEST/$n.duckdb_extension"
done
echo "extensions: $DEST has ${NAMES[*]}"
