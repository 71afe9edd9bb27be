package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
)

// EachCSV reads the CSV file name through open (Open, or a test's
// stand-in): its header row, then fn for every record with as many fields
// as the header, given the fields of the columns need names, in need's
// order. fields is reused from one call to the next. A missing column or
// a read error fails, naming the file; an error of fn stops the read and
// is returned as it is.
func EachCSV(open func(string) (io.ReadCloser, error), name string, need []string, fn func(fields []string) error) error {
	rc, err := open(name)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer rc.Close()
	cr := csv.NewReader(rc)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	cols := make([]int, len(need))
	for i, c := range need {
		cols[i] = -1
		for j, h := range header {
			if h == c {
				cols[i] = j
				break
			}
		}
		if cols[i] < 0 {
			return fmt.Errorf("%s: no %s column", name, c)
		}
	}
	width := len(header)
	fields := make([]string, len(need))
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if len(rec) != width {
			continue
		}
		for i, c := range cols {
			fields[i] = rec[c]
		}
		if err := fn(fields); err != nil {
			return err
		}
	}
}
