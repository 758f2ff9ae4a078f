#!/bin/sh
# recruit-etl: put the nightly job on a Debian machine, from zero, in the order of
# docs/scheduling.md "Rollout from zero" (each step below prints its number and title there).
#
#   sudo deploy/install.sh [--config FILE] [--secret-stdin] [--scheduler systemd|cron|none]
#
# Run from a built checkout (make build). Idempotent: a second run changes nothing it does not
# have to; an existing config file and secret are kept unless --config / --secret-stdin give new ones.
#
# Environment:
#   DESTDIR       install into this scratch root instead of / (default: empty). The user and group
#                 go into DESTDIR/etc/passwd, group, shadow, gshadow (useradd --prefix), files are
#                 owned by the ids found there, and nothing is started or registered on the machine
#                 itself: what a real install would also do is printed as "would run: ...".
#   PREFIX        where the application goes: PREFIX/lib/recruit-etl, the command PREFIX/bin/recruit-etl
#                 (default /usr/local)
#   TEXTFILE_DIR  node_exporter's textfile-collector directory the metrics file is written into
#                 (default /var/lib/prometheus/node-exporter, Debian's prometheus-node-exporter)
#
# Must run as root (useradd, chown). Exit 0 when done; 1 with one "install.sh: error: ..." line.
set -eu

DESTDIR="${DESTDIR:-}"
PREFIX="${PREFIX:-/usr/local}"
TEXTFILE_DIR="${TEXTFILE_DIR:-/var/lib/prometheus/node-exporter}"
NAME=recruit-etl
CONF_DIR=/etc/recruit-etl
STATE_DIR=/var/lib/recruit-etl
LOG_DIR=/var/log/recruit-etl
LIB_DIR="$PREFIX/lib/recruit-etl"
BIN_DIR="$PREFIX/bin"
UNIT_DIR=/etc/systemd/system
SRC="$(cd "$(dirname "$0")/.." && pwd)"

config_src=
secret_stdin=
scheduler=none
stage=
old=
secret_tmp=
trap 'rm -rf "$stage" "$old" "$secret_tmp"' EXIT

die() { echo "install.sh: error: $*" >&2; exit 1; }
step() { echo "install.sh: step $1: $2" >&2; }
note() { echo "install.sh: $*" >&2; }
# A command that changes the machine itself: run it, or in DESTDIR mode only print it.
on_machine() {
  if [ -n "$DESTDIR" ]; then note "would run: $*"; else "$@"; fi
}

while [ $# -gt 0 ]; do
  case "$1" in
    --config) [ $# -ge 2 ] || die "--config needs a file"; config_src="$2"; shift 2 ;;
    --config=*) config_src="${1#--config=}"; shift ;;
    --secret-stdin) secret_stdin=1; shift ;;
    --scheduler) [ $# -ge 2 ] || die "--scheduler needs systemd, cron or none"; scheduler="$2"; shift 2 ;;
    --scheduler=*) scheduler="${1#--scheduler=}"; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
case "$scheduler" in systemd|cron|none) ;; *) die "--scheduler must be systemd, cron or none, not $scheduler" ;; esac
case "$PREFIX" in /*) ;; *) die "PREFIX must be an absolute path, not $PREFIX" ;; esac
case "$TEXTFILE_DIR" in /*) ;; *) die "TEXTFILE_DIR must be an absolute path, not $TEXTFILE_DIR" ;; esac
case "$PREFIX$TEXTFILE_DIR" in *[!A-Za-z0-9._/-]*) die "PREFIX and TEXTFILE_DIR may hold only letters, digits and . _ / -" ;; esac
[ "$(id -u)" = 0 ] || die "run as root (it creates a user and sets owners)"
[ -z "$config_src" ] || [ -f "$config_src" ] || die "--config $config_src is not a file"
[ -x "$SRC/dist/cli.js" ] || die "$SRC/dist/cli.js is missing: run make build first"
[ -f "$SRC/packages/event-types/dist/index.js" ] || die "$SRC/packages/event-types/dist is missing: run make build first"
command -v npm >/dev/null 2>&1 || die "npm is missing: install Node.js 20 (node and npm)"
# package.json "engines": node >= 20.19
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' \
  || die "node $(node --version 2>/dev/null || echo missing) is older than 20.19: install Node.js 20"
umask 022

# The numeric id of a user or group, from DESTDIR's files in DESTDIR mode, else from NSS.
id_of() { # passwd|group name
  if [ -n "$DESTDIR" ]; then
    awk -F: -v n="$2" '$1 == n { print $3; exit }' "$DESTDIR/etc/$1"
  else
    getent "$1" "$2" | cut -d: -f3
  fi
}

# Create or fix a directory: owner uid, group gid, mode.
dir() { # path uid gid mode
  mkdir -p "$DESTDIR$1"
  chown "$2:$3" "$DESTDIR$1"
  chmod "$4" "$DESTDIR$1"
}

# Write stdin to a file atomically (a temporary file beside it, then rename), owner and mode set first.
put() { # path uid gid mode
  put_tmp="$DESTDIR$1.tmp.$$"
  (umask 077 && cat >"$put_tmp")
  chown "$2:$3" "$put_tmp"
  chmod "$4" "$put_tmp"
  mv -f "$put_tmp" "$DESTDIR$1"
}

# The deploy/ recipes with this install's paths in place of the defaults they are written with.
render() { # file
  sed -e "s|/usr/local/bin/recruit-etl|$BIN_DIR/recruit-etl|g" \
      -e "s|file:///usr/local/lib/recruit-etl/|file://$LIB_DIR/|g" \
      -e "s|^PATH=/usr/local/bin:|PATH=$BIN_DIR:|" \
      -e "s|/var/lib/prometheus/node-exporter|$TEXTFILE_DIR|g" "$SRC/deploy/$1"
}

step 1 "the system user and group $NAME"
if [ -n "$DESTDIR" ]; then
  mkdir -p "$DESTDIR/etc"
  for f in passwd group shadow gshadow; do [ -e "$DESTDIR/etc/$f" ] || : >"$DESTDIR/etc/$f"; done
  chmod 0640 "$DESTDIR/etc/shadow" "$DESTDIR/etc/gshadow"
fi
if [ -z "$(id_of passwd "$NAME")" ]; then
  if [ -n "$(id_of group "$NAME")" ]; then group_opt="--gid $NAME"; else group_opt=--user-group; fi
  # shellcheck disable=SC2086 # group_opt is two words or one on purpose
  useradd ${DESTDIR:+--prefix "$DESTDIR"} --system $group_opt --home-dir "$STATE_DIR" --no-create-home \
    --shell /usr/sbin/nologin --comment "recruit-etl nightly job" "$NAME"
fi
uid="$(id_of passwd "$NAME")"
gid="$(id_of group "$NAME")"
[ -n "$uid" ] && [ -n "$gid" ] || die "user or group $NAME not found after useradd"

step 2 "the application in $LIB_DIR, the command $BIN_DIR/recruit-etl"
stage="$DESTDIR$LIB_DIR.new.$$"
old="$DESTDIR$LIB_DIR.old.$$"
mkdir -p "$stage"
cp -R "$SRC/package.json" "$SRC/package-lock.json" "$SRC/README.md" "$SRC/dist" "$SRC/sql" "$SRC/docs" "$stage/"
# The event-type names the job imports (a workspace package); the simulator (packages/mock-api)
# is a development package: without its folder, npm ci --omit=dev leaves it out.
mkdir -p "$stage/packages/event-types"
cp -R "$SRC/packages/event-types/package.json" "$SRC/packages/event-types/dist" "$stage/packages/event-types/"
if [ -d "$SRC/.duckdb/extensions" ]; then mkdir -p "$stage/.duckdb" && cp -R "$SRC/.duckdb/extensions" "$stage/.duckdb/"; fi
if [ -d "$DESTDIR$LIB_DIR/node_modules" ] && cmp -s "$SRC/package-lock.json" "$DESTDIR$LIB_DIR/package-lock.json"; then
  cp -al "$DESTDIR$LIB_DIR/node_modules" "$stage/"   # the same production dependencies: hard links
else
  (cd "$stage" && npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error >&2)
fi
chown -R 0:0 "$stage"
if [ -d "$DESTDIR$LIB_DIR" ]; then mv "$DESTDIR$LIB_DIR" "$old"; fi
mv "$stage" "$DESTDIR$LIB_DIR"
rm -rf "$old"
mkdir -p "$DESTDIR$BIN_DIR"
ln -sfn "../lib/recruit-etl/dist/cli.js" "$DESTDIR$BIN_DIR/recruit-etl"

step 3 "the directories: $CONF_DIR, $STATE_DIR, $LOG_DIR, $TEXTFILE_DIR"
dir "$CONF_DIR" 0 "$gid" 0750
dir "$STATE_DIR" "$uid" "$gid" 0750
dir "$LOG_DIR" "$uid" "$gid" 0750
# The textfile directory belongs to prometheus-node-exporter (root:root 0755): the job's group may
# write into it (the metrics file is renamed into place), and the sticky bit keeps it from
# replacing or deleting other collectors' .prom files. dpkg-statoverride keeps that through
# upgrades of the package.
if [ ! -d "$DESTDIR$TEXTFILE_DIR" ]; then mkdir -p "$DESTDIR$TEXTFILE_DIR"; fi
chown "0:$gid" "$DESTDIR$TEXTFILE_DIR"
chmod 1775 "$DESTDIR$TEXTFILE_DIR"
if [ -n "$DESTDIR" ]; then
  note "would run: dpkg-statoverride --update --add root $NAME 1775 $TEXTFILE_DIR"
elif command -v dpkg-statoverride >/dev/null 2>&1 && ! dpkg-statoverride --list "$TEXTFILE_DIR" >/dev/null 2>&1; then
  dpkg-statoverride --update --add root "$NAME" 1775 "$TEXTFILE_DIR"
fi

step 4 "the options in $CONF_DIR/config.json"
if [ -n "$config_src" ]; then
  put "$CONF_DIR/config.json" 0 "$gid" 0640 <"$config_src"
elif [ ! -e "$DESTDIR$CONF_DIR/config.json" ]; then
  # Empty values: until they are filled in, every run stops with exit 2 naming them.
  put "$CONF_DIR/config.json" 0 "$gid" 0640 <<'EOF'
{
  "base-url": "",
  "auth-url": "",
  "client-id": "",
  "audience": "",
  "trial-id": "",
  "environment": "production"
}
EOF
  note "$CONF_DIR/config.json: fill in base-url, auth-url, client-id, audience and trial-id"
fi

step 5 "the client secret in $CONF_DIR/client-secret"
if [ -n "$secret_stdin" ]; then
  secret_tmp="$DESTDIR$CONF_DIR/client-secret.in.$$"
  (umask 077 && head -c 65537 >"$secret_tmp")
  size="$(wc -c <"$secret_tmp")"
  if [ "$size" -eq 0 ] || [ "$size" -gt 65536 ]; then rm -f "$secret_tmp"; die "the secret on stdin is empty or over 64 KiB"; fi
  put "$CONF_DIR/client-secret" 0 "$gid" 0640 <"$secret_tmp"
  rm -f "$secret_tmp"
elif [ ! -e "$DESTDIR$CONF_DIR/client-secret" ]; then
  put "$CONF_DIR/client-secret" 0 "$gid" 0640 </dev/null   # empty: runs stop with exit 2 until it is filled
  note "$CONF_DIR/client-secret is empty: run again with --secret-stdin"
else
  chown "0:$gid" "$DESTDIR$CONF_DIR/client-secret"
  chmod 0640 "$DESTDIR$CONF_DIR/client-secret"
fi

step 6 "the systemd units in $UNIT_DIR and the crontab in $CONF_DIR/crontab"
mkdir -p "$DESTDIR$UNIT_DIR"
render recruit-etl.service | put "$UNIT_DIR/recruit-etl.service" 0 0 0644
render recruit-etl.timer | put "$UNIT_DIR/recruit-etl.timer" 0 0 0644
render crontab | put "$CONF_DIR/crontab" 0 "$gid" 0640

step 7 "the scheduler"
note "scheduler: $scheduler"
case "$scheduler" in
  systemd)
    # One scheduler: a crontab left by an earlier --scheduler cron goes.
    if [ -z "$DESTDIR" ] && crontab -u "$NAME" -l >/dev/null 2>&1; then crontab -u "$NAME" -r; note "removed the crontab of $NAME"; fi
    on_machine systemctl daemon-reload
    on_machine systemctl enable --now recruit-etl.timer ;;
  cron)
    # One scheduler: a timer left by an earlier --scheduler systemd goes.
    if [ -z "$DESTDIR" ] && command -v systemctl >/dev/null 2>&1 && systemctl is-enabled --quiet recruit-etl.timer 2>/dev/null; then
      systemctl disable --now recruit-etl.timer
    fi
    on_machine crontab -u "$NAME" "$CONF_DIR/crontab" ;;
  none)
    note "nothing scheduled: run again with --scheduler systemd (or cron)" ;;
esac
note "done"
