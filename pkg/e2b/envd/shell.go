package envd

import (
	"regexp"
)

// Everything done in a sandbox is a POSIX shell script run over exec, its inputs passed as
// positional parameters (never spliced into the script), so any image with /bin/sh and the
// usual tools (coreutils or busybox: stat, find, mkdir, mv, rm, cat, kill, su) works and
// nothing is installed in the pod.

// Exit codes our scripts use to say why they failed; their stderr carries the message.
const (
	exitNotFound        = 10
	exitInvalidArgument = 11
	exitAlreadyExists   = 12
	exitPermission      = 13
)

// Markers a process's wrapper writes on its stderr (its terminal with a PTY) before the
// command's own output: its pid, or why it could not start.
const (
	pidMarker   = "\x01envd-pid "
	errorMarker = "\x01envd-error "
)

// asUserScript runs the script in $2 (with its own parameters after it) as the user in $1: as
// is when the container already runs as that user, through su when it runs as root.
const asUserScript = `u=$1; shift
if [ "$(id -un 2>/dev/null)" = "$u" ]; then exec /bin/sh -c "$@"; fi
if [ "$(id -u 2>/dev/null)" != 0 ]; then
  printf 'cannot run as user %s: the container runs as %s, not root\n' "$u" "$(id -un 2>/dev/null)" >&2
  exit 13
fi
exec su -s /bin/sh "$u" -c "$@"`

// shellCommand is the exec command running script with args, as user when set.
func shellCommand(user, script string, args ...string) []string {
	if user == "" {
		return append([]string{"/bin/sh", "-c", script, "envd"}, args...)
	}
	return append([]string{"/bin/sh", "-c", asUserScript, "envd", user, script, "envd"}, args...)
}

// processScript starts a process: $1 is the number of NAME=value environment entries that
// follow, then the working directory (empty: the user's home), then the command and its args.
// It reports its pid (the command's, as it execs into it) before anything else.
const processScript = `n=$1; shift
while [ "$n" -gt 0 ]; do export "$1"; shift; n=$((n - 1)); done
cwd=$1; shift
cd 2>/dev/null || cd /
if [ -n "$cwd" ] && ! cd -- "$cwd" 2>/dev/null; then
  printf '\001envd-error cwd %s is not a directory this user can enter\n' "$cwd" >&2
  exit 11
fi
if [ "$1" = /bin/bash ] && [ ! -x /bin/bash ]; then shift; set -- /bin/sh "$@"; fi
printf '\001envd-pid %d\n' $$ >&2
exec "$@"`

// killScript sends signal $1 to process $2 and all its descendants (found through /proc), so
// that killing a shell also ends what it started and the exec stream closes. Each generation is
// stopped before its children are looked for, so none can fork one that escapes; all are
// continued after the signal, for those that handle it.
const killScript = `sig=$1; root=$2
[ -d "/proc/$root" ] || { printf 'process %s is not running\n' "$root" >&2; exit 10; }
all=; frontier=$root
while [ -n "$frontier" ]; do
  kill -s STOP $frontier 2>/dev/null
  all="$all $frontier"
  next=
  for d in /proc/[0-9]*; do
    read -r line 2>/dev/null < "$d/stat" || continue
    rest=${line##*) }
    set -- $rest
    for q in $frontier; do [ "$2" = "$q" ] && next="$next ${d#/proc/}"; done
  done
  frontier=$next
done
kill -s "$sig" $all 2>/dev/null
kill -s CONT $all 2>/dev/null
exit 0`

// fsLib is the prelude of the filesystem scripts: abs sets p to a path made absolute against
// the user's home; entry prints one entry's record (see parseEntries).
const fsLib = `export LC_ALL=C
fail() { c=$1; shift; printf '%s\n' "$*" >&2; exit "$c"; }
abs() {
  case $1 in
    /*) p=$1 ;;
    "~") p=${HOME:-/} ;;
    "~/"*) p=${HOME%/}/${1#"~/"} ;;
    *) p=${HOME%/}/$1 ;;
  esac
}
exists() { [ -e "$1" ] || [ -L "$1" ]; }
entry() {
  s=$(stat -c '%f %s %Y %U %G' -- "$1") || return 1
  t=
  if [ -L "$1" ]; then t=$(readlink -- "$1"); fi
  printf '%s %d:%s%d:%s\n' "$s" ${#1} "$1" ${#t} "$t"
}
`

const statScript = fsLib + `abs "$1"
exists "$p" || fail 10 "path $p does not exist"
entry "$p"`

const makeDirScript = fsLib + `abs "$1"
if exists "$p"; then
  [ -d "$p" ] && fail 12 "directory $p already exists"
  fail 11 "path $p already exists and is not a directory"
fi
mkdir -p -- "$p" || exit 1
entry "$p"`

const moveScript = fsLib + `abs "$1"; src=$p
abs "$2"; dst=$p
exists "$src" || fail 10 "path $src does not exist"
dir=${dst%/*}
[ -z "$dir" ] || mkdir -p -- "$dir" || exit 1
mv -f -- "$src" "$dst" || exit 1
entry "$dst"`

const removeScript = fsLib + `abs "$1"
exists "$p" || fail 10 "path $p does not exist"
rm -rf -- "$p"`

// listDirScript lists $1 down to depth $2 ($3 is fsLib itself); find hands the paths to a shell of its own, so no
// file name (spaces, newlines) is ever split.
const listDirScript = fsLib + `abs "$1"
exists "$p" || fail 10 "path $p does not exist"
[ -d "$p" ] || fail 11 "path $p is not a directory"
cd -- "$p" || fail 13 "directory $p cannot be entered"
export ENVD_BASE="${p%/}" ENVD_LIB="$3"
find . -mindepth 1 -maxdepth "$2" -exec /bin/sh -c "$ENVD_LIB"'
for f do entry "$ENVD_BASE/${f#./}"; done' envd {} +`

// readScript checks $1 is a readable file, says "ok", then streams it.
const readScript = fsLib + `abs "$1"
exists "$p" || fail 10 "file $p does not exist"
[ -d "$p" ] && fail 11 "path $p is a directory, not a file"
[ -r "$p" ] || fail 13 "file $p is not readable by this user"
printf 'ok\n'
exec cat -- "$p"`

// writeScript writes its stdin to a temporary file next to $1 (named by $2), which
// commitScript then moves into place or abortScript removes: an upload cut short leaves no
// half-written file.
const writeScript = fsLib + `abs "$1"
[ -d "$p" ] && fail 11 "path $p is a directory"
dir=${p%/*}
mkdir -p -- "${dir:-/}" || exit 1
cat > "${dir:-}/.envd-upload-$2"`

const commitScript = fsLib + `abs "$1"
dir=${p%/*}
mv -f -- "${dir:-}/.envd-upload-$2" "$p" || exit 1
entry "$p"`

const abortScript = fsLib + `abs "$1"
dir=${p%/*}
rm -f -- "${dir:-}/.envd-upload-$2"`

// envName is what a process environment variable may be called.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
