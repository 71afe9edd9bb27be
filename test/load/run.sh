#!/usr/bin/env bash
# HTTP load run against a local `permitd serve` with the bundled data.
# Loopback only, bounded in rate and duration; stops by itself.
#
#   test/load/run.sh [RATE] [DURATION]     (default 1000/s for 10s per target)
#
# It builds permitd, starts it on a free loopback port with a fixed key and
# service clock, waits for /v1/health/ready, then attacks one endpoint at a
# time with vegeta (go tool vegeta, pinned in go.mod) and prints each report.
set -euo pipefail
cd "$(dirname "$0")/../.."
RATE=${1:-1000}
DURATION=${2:-10s}
ADDR=127.0.0.1:${PERMITD_LOAD_PORT:-18181}
KEY=load-test-key-0123456789
BASE=http://$ADDR
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT

go build -o "$tmp/permitd" ./cmd/permitd
PERMITD_API_KEYS=$KEY PERMITD_LOG_LEVEL=warn PERMITD_NOW=2026-11-22 \
	"$tmp/permitd" serve -addr "$ADDR" >"$tmp/serve.out" 2>"$tmp/serve.err" &
pid=$!
for _ in $(seq 1 120); do
	code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/health/ready" || true)
	[ "$code" = 200 ] && break
	sleep 0.5
done
[ "$code" = 200 ] || { echo "permitd not ready"; cat "$tmp/serve.err"; exit 1; }

geo() { curl -s -H "X-API-Key: $KEY" "$BASE/v1/locations/resolve?query=$1&limit=1" | sed -E 's/.*"geo_id":"([^"]+)".*/\1/'; }
SEATTLE=$(geo Seattle)
WA=$(geo Washington)
ZIP=$(geo 98101)

attack() {
	local name=$1 path=$2
	printf 'GET %s%s\nX-API-Key: %s\n' "$BASE" "$path" "$KEY" >"$tmp/target"
	echo "== $name: $path ($RATE/s for $DURATION)"
	go tool vegeta attack -targets="$tmp/target" -rate="$RATE" -duration="$DURATION" -timeout=5s \
		| go tool vegeta report -type=text | sed -n '1,8p'
}

attack resolve            "/v1/locations/resolve?query=Seatle"
attack permits-city       "/v1/permits/search?geo_id=$SEATTLE&limit=25"
attack permits-zip-asc    "/v1/permits/search?geo_id=$ZIP&order=asc&limit=25"
attack property           "/v1/search/property?address=600%20University%20Street,%20Seattle"
attack leads-city         "/v1/signals/permit/leads?geo_id=$SEATTLE&limit=25"
attack stats-state        "/v1/signals/permit/stats?geo_id=$WA"
attack geo-search         "/v1/signals/geo/search?limit=25"
