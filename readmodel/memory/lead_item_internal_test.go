package memory

import (
	"math/rand/v2"
	"testing"

	"github.com/permitd/permitd/events"
)

// TestLeadItemsOrderAsRecords checks the trees' item orders against the
// records' (dateLess, confLess) on pairs that tie on day and confidence
// and differ only in their ids: ids of events.LeadID's form, ids without
// its prefix, ids sharing their first bytes, shorter than an
// abbreviation, holding zero bytes, and the empty id of a seek's pivot;
// and each record as a seek key (seekItem) against the others.
func TestLeadItemsOrderAsRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 12))
	ids := []string{"", "lead_", "lead", "lead_0", "lead_00", "lead_0\x00", "lead_0\x00\x00", "a", "a\x00", "a\x00b",
		"abcdefgh", "abcdefgh0", "abcdefgi", "lead_abcdefgh", "lead_abcdefgh1", "lead_abcdefgi", "lead_abcdefg", "lead_\xff\xff",
		"lead_abcdefgh\x00", "leae", "lead`", "zzz"}
	for i := range 40 {
		ids = append(ids, events.LeadID("p"+string(rune('a'+i%26)), "k"))
	}
	recs := make([]*leadRec, 0, 4*len(ids))
	for _, id := range ids {
		for range 4 {
			r := &leadRec{date: int32(rng.IntN(3)), hasConf: rng.IntN(4) > 0, conf: float64(rng.IntN(3)) / 4}
			if rng.IntN(5) == 0 {
				r.date = noDate
			}
			if !r.hasConf {
				r.conf = 0
			}
			r.lead.LeadID = id
			recs = append(recs, r)
		}
	}
	x := newLeadIndex()
	for i, r := range recs {
		p := x.placed()
		*p = leadRec{lead: r.lead, date: r.date, hasConf: r.hasConf, conf: r.conf, slot: p.slot}
		recs[i] = p
	}
	for _, a := range recs {
		for _, b := range recs {
			ia, ib := itemOf(a), itemOf(b)
			if got, want := x.itemDateCmp(ia, ib) < 0, dateLess(a, b); got != want {
				t.Fatalf("date order of %+v and %+v: items say %v, records %v", *a, *b, got, want)
			}
			if got, want := x.itemConfCmp(ia, ib) < 0, confLess(a, b); got != want {
				t.Fatalf("confidence order of %+v and %+v: items say %v, records %v", *a, *b, got, want)
			}
			// a as a seek key: before b when b is not before a, and
			// after b when b is before a on more than the id.
			sa := seekItem(a)
			if c := x.itemDateCmp(sa, ib); !dateLess(b, a) && c >= 0 ||
				dateOrder(b.date, b.hasConf, b.conf, a.date, a.hasConf, a.conf) < 0 && c <= 0 {
				t.Fatalf("date seek of %+v against %+v: %d", *a, *b, c)
			}
			if c := x.itemConfCmp(sa, ib); !confLess(b, a) && c >= 0 ||
				confOrder(b.date, b.hasConf, b.conf, a.date, a.hasConf, a.conf) < 0 && c <= 0 {
				t.Fatalf("confidence seek of %+v against %+v: %d", *a, *b, c)
			}
		}
	}
}
