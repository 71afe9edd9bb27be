package main

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for name, c := range map[string]struct {
		flag, gogc string
		limit      int64
		want       int // the target after apply
		wantErr    string
	}{
		"auto, no limit":      {flag: "auto", want: 100},
		"auto, limit":         {flag: "auto", limit: 8 << 30, want: autoGCPercent},
		"auto, GOGC wins":     {flag: "auto", gogc: "150", limit: 8 << 30, want: 100},
		"explicit":            {flag: "250", want: 250},
		"explicit over limit": {flag: "50", limit: 8 << 30, want: 50},
		"off with a limit":    {flag: "off", limit: 8 << 30, want: -1},
		"off without a limit": {flag: "off", wantErr: "memory limit"},
		"negative":            {flag: "-5", wantErr: "percentage"},
		"not a number":        {flag: "lots", wantErr: "percentage"},
	} {
		t.Run(name, func(t *testing.T) {
			debug.SetGCPercent(100)
			lim := int64(math.MaxInt64)
			if c.limit > 0 {
				lim = c.limit
			}
			debug.SetMemoryLimit(lim)
			cfg := gcConfig{GCPercent: c.flag}
			_, err := cfg.apply(func(k string) string {
				if k == "GOGC" {
					return c.gogc
				}
				return ""
			})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				if cfg.validate() == nil && c.wantErr == "percentage" {
					t.Fatal("validate accepted it")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := debug.SetGCPercent(100); got != c.want {
				t.Fatalf("GC percent %d, want %d", got, c.want)
			}
		})
	}
}
