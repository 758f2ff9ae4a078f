#!/usr/bin/env bash
# Run dbt on the warehouse with the pinned dbt-duckdb:  dbt/dbt.sh build | test | run ...
# Creates .venv at the repo root on first use (python3 -m venv; pip install -r
# dbt/requirements.txt), installs the model package (dbt deps), then runs the given command
# with DBT_PROFILES_DIR=dbt. RECRUIT_ETL_DB (default data/warehouse.duckdb) is resolved
# against the caller's working directory. dbt's own output is shown: a line per node, its
# warnings, and the summary line (`Done. PASS=… WARN=… ERROR=… SKIP=… TOTAL=…`); any failure
# exits non-zero.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
venv="${RECRUIT_ETL_VENV:-$root/.venv}"
requirements="$here/requirements.txt"

if [ "$#" -eq 0 ]; then
  echo "usage: dbt/dbt.sh <dbt command> [args...]   e.g. dbt/dbt.sh build" >&2
  exit 2
fi

db="${RECRUIT_ETL_DB:-$root/data/warehouse.duckdb}"
case "$db" in
  /*) ;;
  *) db="$PWD/$db" ;;
esac
export RECRUIT_ETL_DB="$db"

# (Re)install when the venv is missing or requirements.txt changed since the last install.
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/dbt" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "dbt.sh: installing dbt into $venv" >&2
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || { echo "dbt.sh: error: python3 -m venv $venv failed (install python3-venv)" >&2; exit 1; }
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" \
    || { echo "dbt.sh: error: pip install -r $requirements failed" >&2; exit 1; }
  echo "$want" > "$stamp"
fi

export DBT_PROFILES_DIR="$here"
export DBT_PROJECT_DIR="$here"
export DBT_SEND_ANONYMOUS_USAGE_STATS=false
export DBT_LOG_PATH="${DBT_LOG_PATH:-$here/logs}"
export DBT_TARGET_PATH="${DBT_TARGET_PATH:-$here/target}"
cd "$here"

# --no-partial-parse: the package lives outside this project (a symlink to ../sql); a full
# parse takes about a second, so never risk a stale parse cache.
"$venv/bin/dbt" --quiet deps
exec "$venv/bin/dbt" --no-partial-parse "$@"
