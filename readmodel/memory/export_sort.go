package memory

import (
	"cmp"
	"slices"
	"strings"
)

// An export hands out permits in index order and leads in date order
// (snapshot.go), so that an Import appends them to its trees. Sorting
// the documents' pointers compared them through the pointers: at 1M
// permits, stored in the order a replay met them, nearly every
// comparison was two cache misses, and cmpByLess called the order twice
// for most pairs (3.8 of the 13.5 s of a snapshot's write in serve,
// before any permit could be encoded). The sorts below order copies of
// the keys beside the pointers instead: each document is read once,
// and only ties on the key read the ids' bytes.

// sortPermits sorts ps in index order (permitLess).
func sortPermits(ps []*cpermit) {
	type keyed struct {
		ik int32
		id string
		c  *cpermit
	}
	ks := make([]keyed, len(ps))
	for i, c := range ps {
		ks[i] = keyed{c.ik, c.id, c}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.ik != b.ik {
			return cmp.Compare(a.ik, b.ik)
		}
		return strings.Compare(a.id, b.id)
	})
	for i := range ks {
		ps[i] = ks[i].c
	}
}

// sortLeads sorts ls in date order (dateLess).
func sortLeads(ls []*leadRec) {
	type keyed struct {
		date    int32
		hasConf bool
		conf    float64
		id      string
		l       *leadRec
	}
	ks := make([]keyed, len(ls))
	for i, l := range ls {
		ks[i] = keyed{l.date, l.hasConf, l.conf, l.lead.LeadID, l}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := dateOrder(a.date, a.hasConf, a.conf, b.date, b.hasConf, b.conf); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	for i := range ks {
		ls[i] = ks[i].l
	}
}
