package params

import (
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	for _, c := range []struct{ in, want int }{{0, 7}, {-3, 7}, {1, 1}, {42, 42}} {
		v := c.in
		Default(&v, 7)
		if v != c.want {
			t.Errorf("Default(%d, 7) = %d, want %d", c.in, v, c.want)
		}
	}
	d := time.Duration(0)
	Default(&d, time.Second)
	if d != time.Second {
		t.Errorf("Default(0s, 1s) = %v, want 1s", d)
	}
	d = time.Millisecond
	Default(&d, time.Second)
	if d != time.Millisecond {
		t.Errorf("Default(1ms, 1s) = %v, want 1ms", d)
	}
}
