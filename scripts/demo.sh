#!/usr/bin/env bash
# make demo: start the simulator on DEMO_PORT, run the whole job against it into
# data/warehouse.duckdb and data/exports (with the HTML report, data/exports/report.html), print
# the funnel per trial, stop the simulator.
# Running it again resumes from the stored cursor and loads nothing new.
set -euo pipefail
umask 077
cd "$(dirname "$0")/.."
port="${DEMO_PORT:-8787}"
# DEMO_DATA_DIR: where the simulator's output goes (tests point it at a temporary folder).
dir="${DEMO_DATA_DIR:-data}"
mkdir -p "$dir"
chmod 700 "$dir"
out="$dir/mock-api.out"
err="$dir/mock-api.err"
: > "$out"
# DEMO_FAULTS: simulator faults to show (docs/ingest.md); by default one event with a lone
# surrogate, which the job quarantines (status shows it; make dbt builds over it).
faults=()
for f in ${DEMO_FAULTS-events:loneSurrogate:after=3:event=5}; do faults+=(--fault "$f"); done
node dist/cli.js mock-api --port "$port" --log-level warn "${faults[@]}" > "$out" 2> "$err" &
sim=$!
trap 'kill "$sim" 2>/dev/null || true; wait "$sim" 2>/dev/null || true' EXIT
busy() {
  echo "demo: port $port is already in use (another demo, or another service); pick a free one: make demo DEMO_PORT=8788" >&2
  exit 2
}
for _ in $(seq 1 200); do
  grep -q '"listening"' "$out" && break
  if ! kill -0 "$sim" 2>/dev/null; then
    grep -q 'already in use' "$err" && busy
    echo "demo: the simulator did not start:" >&2; cat "$err" >&2; exit 1
  fi
  sleep 0.1
done
grep -q '"listening"' "$out" || { echo "demo: the simulator did not start on port $port" >&2; exit 1; }
field() { node -e 'const o=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8").split("\n")[0]); const v=o[process.argv[2]]; console.log(Array.isArray(v)?v.join(","):v)' "$out" "$1"; }

export RECRUIT_ETL_BASE_URL="$(field baseUrl)"
export RECRUIT_ETL_AUTH_URL="$(field authUrl)"
export RECRUIT_ETL_CLIENT_ID="$(field clientId)"
export RECRUIT_ETL_CLIENT_SECRET="demo-client-secret"
export RECRUIT_ETL_AUDIENCE="$(field audience)"
export RECRUIT_ETL_TRIAL_ID="$(field trialIds)"
export RECRUIT_ETL_MICROSITE_ID="$(field micrositeId)"
export RECRUIT_ETL_ORIGIN="$(field origin)"
export RECRUIT_ETL_ENVIRONMENT=staging
export RECRUIT_ETL_DB="${RECRUIT_ETL_DB:-data/warehouse.duckdb}"
export RECRUIT_ETL_EXPORT_DIR="${RECRUIT_ETL_EXPORT_DIR:-data/exports}"
# Display names of the simulator's event sites, as an operator would supply them (docs/models.md
# "Site names"); one site is left out on purpose, so dq_unmapped_sites lists it.
export RECRUIT_ETL_SITE_NAMES="${RECRUIT_ETL_SITE_NAMES-scripts/demo-site-names.csv}"
export RECRUIT_ETL_TRIAL_TARGETS="${RECRUIT_ETL_TRIAL_TARGETS-scripts/demo-trial-targets.csv}"

echo "demo: simulator at $RECRUIT_ETL_BASE_URL serving $(field events) events for trials $RECRUIT_ETL_TRIAL_ID"
start=$(date +%s%N)
dist/cli.js run --log-level "${DEMO_LOG_LEVEL:-warn}"
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
printf 'demo: run finished in %d.%03d s\n\n' $((ms / 1000)) $((ms % 1000))
dist/cli.js status
echo
echo "demo: warehouse $RECRUIT_ETL_DB, Parquet in $RECRUIT_ETL_EXPORT_DIR"
echo "demo: report $RECRUIT_ETL_EXPORT_DIR/report.html (open it in a browser: xdg-open $RECRUIT_ETL_EXPORT_DIR/report.html)"
