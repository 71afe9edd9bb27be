#!/bin/sh
# Generates a Go client from the OpenAPI document with oapi-codegen (pinned
# in tools/go.mod) into a temporary module and compiles it.
set -eu
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$root/tools/go.mod" "$root/tools/go.sum" "$tmp/"
mkdir "$tmp/permitdclient"
$GO -C "$root/tools" tool oapi-codegen -config "$root/tools/oapi-codegen.yaml" \
	-o "$tmp/permitdclient/client.gen.go" "$root/api/openapi/openapi.yaml"
$GO -C "$tmp" vet ./permitdclient
echo "openapi: the generated client compiles ($(wc -l <"$tmp/permitdclient/client.gen.go") lines)"
