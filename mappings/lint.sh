#!/bin/sh
# Checks every OpenSearch golden body (mappings/testdata, readmodel/opensearch/testdata)
# against the official API specification with osvalidate -strict. Runs only
# when the shared tree (../shared by default, or $SHARED) exists; prints why
# it skips otherwise. Quirks (correct bodies the spec rejects) are listed in
# QUIRKS below with the spec gap that causes them.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SHARED:-$root/../shared}
if [ ! -f "$shared/tools/osvalidate/main.go" ]; then
	echo "mappings/lint.sh: $shared/tools/osvalidate not found: OpenSearch bodies not checked against the spec"
	exit 0
fi
shared=$(cd "$shared" && pwd)
# file names osvalidate -strict rejects only because of a documented spec quirk
QUIRKS=""
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$shared/tools/osvalidate" && go build -o "$tmp/osvalidate" .)
status=0
for kind in search template index aggs bulk; do
	case $kind in
	search) suffix=.search.json ;; template) suffix=.template.json ;; index) suffix=.index.json ;;
	aggs) suffix=.aggs.json ;; bulk) suffix=.bulk.ndjson ;;
	esac
	files=""
	for f in "$root"/mappings/testdata/*"$suffix" "$root"/readmodel/opensearch/testdata/*"$suffix"; do
		[ -f "$f" ] || continue
		case " $QUIRKS " in *" $(basename "$f") "*) echo "quirk $(basename "$f") (see QUIRKS)"; continue ;; esac
		files="$files $f"
	done
	[ -n "$files" ] || continue
	# shellcheck disable=SC2086 # the list is space-separated paths without spaces
	"$tmp/osvalidate" -spec "$shared/opensearch-spec" -kind "$kind" -strict $files || status=1
done
exit $status
