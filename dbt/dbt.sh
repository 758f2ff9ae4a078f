#!/usr/bin/env bash
# Run dbt on the warehouse with the pinned dbt-duckdb:  dbt/dbt.sh build | test | run ...
# Creates .venv at the repo root on first use (python3 -m venv; pip install -r
# dbt/requirements.txt), installs the model package (dbt deps), then runs the given command
# with DBT_PROFILES_DIR=dbt. RECRUIT_ETL_DB (default data/warehouse.duckdb) is resolved
# against the caller's working directory. `build` and `seed` keep the seed tables the operator
# supplies to the job (operator_supplied in dbt_project.yml) as the job loaded them. dbt's own output is shown: a line per node, its
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

# Seeds the operator supplies to the job (--site-names, …: docs/models.md "Site names") are
# marked `operator_supplied` in dbt_project.yml. `build` and `seed` leave their tables as the job
# loaded them (from the operator's CSV): they are excluded when the warehouse has them, so that
# the packaged CSV (a header only) never replaces the operator's rows. A warehouse without such a
# table (the job never transformed it) gets the packaged seed, as before.
keep=()
case "${1:-}" in
  build | seed)
    mapfile -t keep < <("$venv/bin/python" - "$here/dbt_project.yml" "$db" <<'PY'
import os, sys
import duckdb, yaml
project, db = sys.argv[1], sys.argv[2]
with open(project) as f:
    seeds = ((yaml.safe_load(f) or {}).get("seeds") or {}).get("recruit_etl") or {}
names = [n for n, c in seeds.items() if isinstance(c, dict) and (c.get("+meta") or {}).get("operator_supplied") is True]
if names and os.path.exists(db):
    con = duckdb.connect(db, read_only=True)
    have = {r[0] for r in con.execute("select table_name from information_schema.tables where table_schema = 'main' and table_type = 'BASE TABLE'").fetchall()}
    con.close()
    kept = [n for n in names if n in have]
    for n in kept:
        var = (seeds[n].get("+meta") or {}).get("variable")
        if var and os.environ.get(var):
            print(f"dbt.sh: {var} is set: dbt keeps {n} as the job last loaded it; give the file to the job (recruit-etl transform) to load it", file=sys.stderr)
    print("\n".join(kept))
PY
    ) || { echo "dbt.sh: error: cannot read the operator's seed tables of $db" >&2; exit 1; }
    keep=($(printf '%s\n' "${keep[@]}" | grep -v '^$' || true))
    if [ "${#keep[@]}" -gt 0 ]; then
      echo "dbt.sh: keeping ${keep[*]} as the job loaded them (operator_supplied in dbt_project.yml)" >&2
      keep=(--exclude "${keep[@]}")
    fi
    ;;
esac

# --no-partial-parse: the package lives outside this project (a symlink to ../sql); a full
# parse takes about a second, so never risk a stale parse cache.
"$venv/bin/dbt" --quiet deps
exec "$venv/bin/dbt" --no-partial-parse "$@" "${keep[@]}"
