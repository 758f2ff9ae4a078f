#!/usr/bin/env bash
# make demo-lake: the demo (scripts/demo.sh) publishing into a DuckLake whose catalog is a
# private PostgreSQL cluster this script starts (initdb in a temporary folder, a free loopback
# port) and stops at the end; the lake's Parquet files go to data/lake. Prints the attach
# statement and reads the lake from a second process (docs/lakehouse.md).
# DEMO_LAKE_KEEP=1 leaves the server running (and says how to stop it).
set -euo pipefail
umask 077
cd "$(dirname "$0")/.."
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
[[ -x "$PG_BIN/initdb" && -x "$PG_BIN/pg_ctl" ]] || { echo "demo-lake: PostgreSQL binaries not found in $PG_BIN (set PG_BIN)" >&2; exit 1; }

pgdir=$(mktemp -d /tmp/recruit-etl-demo-pg.XXXXXX)
as=()
if [[ $(id -u) == 0 ]]; then
  # initdb refuses root: the cluster belongs to an unprivileged user.
  user=postgres; id -u postgres >/dev/null 2>&1 || user=nobody
  chown "$user" "$pgdir"; as=(runuser -u "$user" --)
fi
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
stop() {
  if [[ "${DEMO_LAKE_KEEP:-0}" == 1 ]]; then
    echo "demo-lake: PostgreSQL left running; stop it with: ${as[*]} $PG_BIN/pg_ctl -D $pgdir/data stop && rm -rf $pgdir"
    return
  fi
  "${as[@]}" "$PG_BIN/pg_ctl" -D "$pgdir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$pgdir"
}
trap stop EXIT
"${as[@]}" "$PG_BIN/initdb" -D "$pgdir/data" -U recruit -A trust -E UTF8 --no-sync --no-instructions >/dev/null
"${as[@]}" "$PG_BIN/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w \
  -o "-p $port -k $pgdir -c listen_addresses=127.0.0.1" start >/dev/null
"${as[@]}" "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U recruit lake
echo "demo-lake: PostgreSQL 15 on 127.0.0.1:$port (catalog database lake), Parquet files in data/lake"

rm -rf data/lake
mkdir -p data
export RECRUIT_ETL_LAKE="ducklake:postgres:dbname=lake host=127.0.0.1 port=$port user=recruit"
export RECRUIT_ETL_LAKE_DATA_PATH="$PWD/data/lake/"
export RECRUIT_ETL_LAKE_SCHEMA=staging
bash scripts/demo.sh
# A second publish with nothing new: a snapshot that changes no table.
dist/cli.js publish --log-level warn

echo
echo "demo-lake: attach the lake from the DuckDB CLI or Python (extensions: make extensions, or INSTALL ducklake; INSTALL postgres):"
echo "  ATTACH '$RECRUIT_ETL_LAKE' AS lake (READ_ONLY);"
echo
node scripts/lake-query.mjs "$RECRUIT_ETL_LAKE" \
  "select snapshot_id, snapshot_time::varchar as at, commit_message from lake.snapshots() order by snapshot_id desc limit 4" \
  "select pipeline, count(*) as events from lake.all_pipelines.raw_events group by all" \
  "select trial_id, sum(referrals) as referrals, sum(reached_enrolled) as enrolled from lake.all_pipelines.mart_recruitment_funnel group by all order by 1"
echo "demo-lake: Parquet files of the lake:"
find data/lake -name '*.parquet' | sed 's|^|  |' | head -12
echo "  ($(find data/lake -name '*.parquet' | wc -l) files)"
