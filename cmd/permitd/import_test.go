package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
)

func noEnv(string) string { return "" }

func decodeLines(t *testing.T, raw []byte) map[events.Type]int {
	t.Helper()
	out := map[events.Type]int{}
	for _, line := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		env, err := events.Decode(line)
		require.NoError(t, err)
		out[env.Type]++
	}
	return out
}

func TestImportSeattleWritesEvents(t *testing.T) {
	out := filepath.Join(t.TempDir(), "seattle.ndjson")
	var stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"import", "seattle", "-out", out}, noEnv, &bytes.Buffer{}, &stderr))
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, map[events.Type]int{events.PermitUpserted: 10246 + 4180, events.PropertyUpserted: 8230}, decodeLines(t, raw))
	assert.Contains(t, stderr.String(), "10246 rows, 10246 permits, 0 bad rows")
	assert.Contains(t, stderr.String(), "4180 rows, 4180 permits, 0 bad rows")
}

func TestGenWritesEvents(t *testing.T) {
	args := []string{"gen", "-permits", "500", "-seed", "9", "-now", "2025-11-22"}
	var a, b, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), args, noEnv, &a, &stderr))
	require.NoError(t, run(context.Background(), args, noEnv, &b, &bytes.Buffer{}))
	assert.Equal(t, a.String(), b.String(), "deterministic")
	counts := decodeLines(t, a.Bytes())
	assert.Equal(t, 500, counts[events.PermitUpserted])
	assert.Positive(t, counts[events.PropertyUpserted])
	assert.Contains(t, stderr.String(), "generated 500 permits")
}

func TestImportAndGenUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"import without dataset", []string{"import"}, "usage"},
		{"import unknown dataset", []string{"import", "chicago"}, `dataset "chicago"`},
		{"gen without permits", []string{"gen"}, "permits must be 1 to 1000000000"},
		{"gen over the bound", []string{"gen", "-permits", "2000000000000"}, "permits must be 1 to 1000000000"},
		{"gen bad now", []string{"gen", "-permits", "1", "-now", "2024-13-40"}, "now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tt.args, noEnv, &bytes.Buffer{}, &stderr)
			require.Error(t, err)
			assert.True(t, strings.Contains(err.Error(), tt.want) || strings.Contains(stderr.String(), tt.want), "%v / %s", err, stderr.String())
		})
	}
}
