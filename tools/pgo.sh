#!/bin/sh
# pgo.sh regenerates cmd/permitd/default.pgo, the CPU profile that `go
# build ./cmd/permitd` (and `go run`, `go test` of that package) compiles
# permitd with: profile-guided optimisation, Go's -pgo=auto. It profiles
# the work users cause, as the benchmarks and the load harness do:
#
#   - the real event mix through kafka-go from a broker process: a
#     replay round, its live ingest and the time until the store settles
#     (BenchmarkIngestMix's PERMITD_BENCH_*_CPUPROFILE);
#   - every v1 endpoint at saturation with the bundled data
#     (test/load/driver -pprof: one profiled attack per endpoint);
#
# and merges them (go tool pprof -proto). Run it from the repository's
# root (make pgo) after a change that moves where the CPU goes; commit
# the profile. A stale profile is still safe: it only guides inlining and
# devirtualisation, never what the code does.
set -eu
GO=${GO:-go}
out=cmd/permitd/default.pgo
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM

echo "pgo: the mix's ingest (indexer/kafka BenchmarkIngestMix)"
$GO test -c -o "$dir/kafka.test" ./indexer/kafka/
(cd indexer/kafka && \
	PERMITD_BENCH_PROFILE_ROUND=1 \
	PERMITD_BENCH_MIX_CPUPROFILE="$dir/ingest-replay.pprof" \
	PERMITD_BENCH_LIVE_CPUPROFILE="$dir/ingest-live.pprof" \
	PERMITD_BENCH_SETTLE_CPUPROFILE="$dir/ingest-settle.pprof" \
	"$dir/kafka.test" -test.run '^$' -test.bench 'IngestMix$' -test.benchtime 1x >"$dir/ingest.txt")

echo "pgo: every endpoint under load (test/load/driver -pprof)"
$GO build -o "$dir/permitd" ./cmd/permitd
$GO build -o "$dir/floor" ./test/load/floor
$GO run ./test/load/driver -permitd "$dir/permitd" -floor "$dir/floor" -pprof "$dir/load" -duration 3s >"$dir/load.txt"

$GO tool pprof -proto "$dir"/ingest-*.pprof "$dir"/load/*.cpu.pprof >"$dir/merged.pgo"
mv "$dir/merged.pgo" "$out"
echo "pgo: wrote $out ($(wc -c <"$out") bytes); commit it"
