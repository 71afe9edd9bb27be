package data

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
)

func TestEachCSV(t *testing.T) {
	open := func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader("a,b,c\n1,2,3\nshort,row\n4,5,6\n")), nil
	}
	var got []string
	err := EachCSV(open, "f.csv", []string{"c", "a"}, func(f []string) error {
		got = append(got, f[0]+f[1])
		return nil
	})
	if err != nil || strings.Join(got, " ") != "31 64" {
		t.Fatalf("got %v, %v; want the named columns in need's order, the short row skipped", got, err)
	}

	err = EachCSV(open, "f.csv", []string{"a", "zips"}, func([]string) error { return nil })
	if err == nil || err.Error() != "f.csv: no zips column" {
		t.Fatalf("missing column: %v", err)
	}

	stop := errors.New("stop")
	calls := 0
	err = EachCSV(open, "f.csv", []string{"a"}, func([]string) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Fatalf("fn's error: %v after %d calls, want it as it is after 1", err, calls)
	}

	err = EachCSV(Open, "nope.csv", []string{"a"}, func([]string) error { return nil })
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "open nope.csv: ") {
		t.Fatalf("open error: %v", err)
	}
}
