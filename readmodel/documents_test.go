package readmodel

import "testing"

func TestIsPropertyID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"prop_0123456789abcdef0123456789abcdef", true},
		{"prop_0123456789ABCDEF0123456789abcdef", false}, // upper-case hex
		{"prop_0123456789abcdef0123456789abcde", false},  // 31 digits
		{"prop_0123456789abcdef0123456789abcdeg", false},
		{"parcel-0001", false},
		{"", false},
	} {
		if got := IsPropertyID(tc.id); got != tc.want {
			t.Errorf("IsPropertyID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}
