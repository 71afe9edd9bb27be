#!/bin/sh
# count.sh compares the work of the mix's replay between a base revision
# (COUNT_BASE, default HEAD, built in a temporary worktree) and the work
# tree as it is: test/handlecount built at each, with the binary's PGO
# profile, counted under valgrind's cachegrind (instructions and
# simulated cache misses an event; COUNT_FLAGS passes -pairs,
# -permits and -settled). Run it from the repository's root (make count). It needs
# valgrind (Debian's valgrind package) and takes about 10 minutes for
# the default mix and two runs of each build.
set -eu
GO=${GO:-go}
base=${COUNT_BASE:-HEAD}
command -v valgrind >/dev/null || { echo "count.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add --detach "$tmp/base" "$base" >/dev/null 2>&1
(cd "$tmp/base" && $GO build -pgo=cmd/permitd/default.pgo -o "$tmp/a.handlecount" ./test/handlecount)
$GO build -pgo=cmd/permitd/default.pgo -o "$tmp/b.handlecount" ./test/handlecount
# shellcheck disable=SC2086 # COUNT_FLAGS is a list of flags
$GO run ./test/handlecount -A "$tmp/a.handlecount" -B "$tmp/b.handlecount" ${COUNT_FLAGS:-}
