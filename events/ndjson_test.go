package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAppendJSON: AppendJSON writes what json.Marshal writes, for every
// event type, and NDJSONWriter one such line per envelope.
func TestAppendJSON(t *testing.T) {
	var envs []Envelope
	var want bytes.Buffer
	for i, typ := range Types {
		var data any
		if typ == LocationUpserted {
			data = &Location{GeoType: "city", Name: `Coeur d'Alene <"ID">`, DisplayName: "Coeur d'Alene, ID", State: "ID", Lat: 47.68, Lon: -116.78}
		} else if p := newPayload(typ, false); p != nil {
			data = p
		}
		env, err := New(typ, "id-"+strings.Repeat("x", i), int64(i+1), time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), "test", data)
		if err != nil {
			t.Fatal(err)
		}
		marshalled, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		got, err := env.AppendJSON([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "prefix"+string(marshalled) {
			t.Fatalf("%s:\n got %s\nwant prefix%s", typ, got, marshalled)
		}
		envs = append(envs, env)
		want.Write(marshalled)
		want.WriteByte('\n')
	}
	var out bytes.Buffer
	nw := NewNDJSONWriter(&out, 64)
	for _, env := range envs {
		if err := nw.Write(env); err != nil {
			t.Fatal(err)
		}
	}
	if err := nw.Flush(); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Fatalf("NDJSON:\n got %s\nwant %s", out.String(), want.String())
	}
}

// EachNDJSONLine numbers lines as a file does (empty ones count, and are
// not handed over), stops at fn's error, and names the line it could not
// read.
func TestEachNDJSONLine(t *testing.T) {
	var got []string
	err := EachNDJSONLine(strings.NewReader("a\n\nb\nc"), func(line int, raw []byte) error {
		got = append(got, fmt.Sprintf("%d:%s", line, raw))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"1:a", "3:b", "4:c"}, got)

	stop := errors.New("stop")
	err = EachNDJSONLine(strings.NewReader("a\nb\n"), func(int, []byte) error { return stop })
	require.Same(t, stop, err)

	long := "x\n" + strings.Repeat("y", 16<<20+1) + "\n"
	err = EachNDJSONLine(strings.NewReader(long), func(int, []byte) error { return nil })
	require.ErrorIs(t, err, bufio.ErrTooLong)
	require.ErrorContains(t, err, "line 2: ")
}
