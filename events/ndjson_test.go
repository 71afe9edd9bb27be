package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
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
	require.ErrorIs(t, err, ErrLineTooLong)
	require.ErrorContains(t, err, "line 2: ")
}

// Blank lines (spaces, tabs and carriage returns only) are passed over
// like empty ones, and a UTF-8 byte order mark opening the input is not
// the first line's; both were handed over and reported as invalid
// events by publish (a BOM as "invalid character 'ï'").
func TestEachNDJSONLineBlankAndBOM(t *testing.T) {
	var got []string
	in := "\xEF\xBB\xBF{\"a\":1}\r\n \t \r\n\r\n{\"b\":2}\n   \n\xEF\xBB\xBF{}\n"
	require.NoError(t, EachNDJSONLine(strings.NewReader(in), func(line int, raw []byte) error {
		got = append(got, fmt.Sprintf("%d:%s", line, raw))
		return nil
	}))
	require.Equal(t, []string{`1:{"a":1}`, `4:{"b":2}`, "6:\xEF\xBB\xBF{}"}, got, "a BOM past the first line stays")

	got = got[:0]
	require.NoError(t, EachNDJSONLine(strings.NewReader("\xEF\xBB\xBF\n{}"), func(line int, raw []byte) error {
		got = append(got, fmt.Sprintf("%d:%s", line, raw))
		return nil
	}))
	require.Equal(t, []string{"2:{}"}, got, "a first line of a BOM alone is blank")
}

// EachNDJSONLineOver hands a line over 16 MiB to long and reads on; a
// line of exactly 16 MiB, with a newline and a carriage return or
// without, is a line like any other.
func TestEachNDJSONLineOver(t *testing.T) {
	max := strings.Repeat("m", 16<<20)
	in := "x\n" + max + "y\r\n" + max + "\r\n" + "z\r\n" + max + "yy\n\n" + max + "y"
	var got []string
	var over []string
	err := EachNDJSONLineOver(strings.NewReader(in), func(line int, raw []byte) error {
		if len(raw) > 20 {
			require.Equal(t, max, string(raw))
			got = append(got, fmt.Sprintf("%d:max", line))
			return nil
		}
		got = append(got, fmt.Sprintf("%d:%s", line, raw))
		return nil
	}, func(line int, n int64) error {
		over = append(over, fmt.Sprintf("%d:%d", line, n-16<<20))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"1:x", "3:max", "4:z"}, got)
	require.Equal(t, []string{"2:1", "5:2", "7:1"}, over)

	stop := errors.New("stop")
	err = EachNDJSONLineOver(strings.NewReader(in), func(int, []byte) error { return nil }, func(int, int64) error { return stop })
	require.Same(t, stop, err)
}

// EachNDJSONLine hands over what bufio.Scanner's lines are (the reader
// it replaced), for lines of any mix of newlines, carriage returns and
// lengths around the reader's buffer.
func TestEachNDJSONLineAgreesWithScanner(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var b strings.Builder
		for range rng.IntN(12) {
			switch rng.IntN(6) {
			case 0:
				b.WriteString("\n")
			case 1:
				b.WriteString("\r\n")
			case 2:
				b.WriteString("\r")
			case 3:
				b.WriteString(strings.Repeat("a", 1<<20-1+rng.IntN(3)))
			default:
				b.WriteString(strings.Repeat("b", rng.IntN(5)))
			}
		}
		in := b.String()
		var want []string
		sc := bufio.NewScanner(strings.NewReader(in))
		sc.Buffer(nil, 16<<20)
		line := 0
		for sc.Scan() {
			line++
			text := sc.Bytes()
			if line == 1 {
				text = bytes.TrimPrefix(text, []byte("\xEF\xBB\xBF"))
			}
			if strings.Trim(string(text), " \t\r") != "" {
				want = append(want, fmt.Sprintf("%d:%d:%q", line, len(sc.Bytes()), sc.Bytes()[max(0, len(sc.Bytes())-3):]))
			}
		}
		require.NoError(t, sc.Err())
		var got []string
		require.NoError(t, EachNDJSONLine(strings.NewReader(in), func(line int, raw []byte) error {
			got = append(got, fmt.Sprintf("%d:%d:%q", line, len(raw), raw[max(0, len(raw)-3):]))
			return nil
		}))
		require.Equal(t, want, got, "%q", in[:min(len(in), 80)])
	}
}
