package memory

import (
	"slices"
	"strings"
)

// Abbreviated ids. A permit set is ordered by issue day, then permit id
// (permit_index.go); its keys hold the day, so only keys of one day
// compare ids. In a large store a day holds thousands of permits of a
// state's sets, and a seek's last dozen steps all tie on the day: each
// compared two ids through the slab, three dependent cache misses.
//
// An abbreviated id is 16 bytes such that two permits whose abbreviations
// are both non-zero and differ are in the order of their abbreviations;
// equal ones, or a zero one, say nothing and the ids are compared. (Sort
// implementations call this an abbreviated key.) Permit ids share long
// prefixes ("seattle_sdci_building:6268348", "synthetic:SYN-7-27798"),
// so an id's first bytes would tie as often as the day does. The
// abbreviation skips them:
//
//   - the id's group is what precedes its first ':' (the source). The
//     top 16 bits are the group's rank: groups are ranked in the order
//     of group+":" (which is their ids' order, as no group holds a ':'),
//     with gaps, so a group seen later takes a rank between its
//     neighbours' and no abbreviation ever changes;
//   - the other 14 bytes are the first of what follows the ':' (the
//     permit number), zero-padded: permit numbers are mostly shorter
//     than that ("6268348", "BLD2024-00123", "SYN-7-1234567"), and two of
//     one group compare as these bytes do, when they differ.
//
// An id without a ':', or of a group that found no free rank, has no
// abbreviation (zero).
type abbreviator struct {
	groups map[string]uint64 // rank; 0: the group's ids have no abbreviation
	ranked []rankedGroup     // by group+":"
}

type rankedGroup struct {
	key  string // group + ":"
	rank uint64
}

// abbrID is an abbreviated id: hi then lo, compared as unsigned.
type abbrID struct{ hi, lo uint64 }

// none reports whether a is no abbreviation.
func (a abbrID) none() bool { return a.hi == 0 }

func (a abbrID) less(b abbrID) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

const abbrRankBits = 16

// of is id's abbreviation; the first id of a group ranks it.
func (a *abbreviator) of(id string) abbrID {
	i := strings.IndexByte(id, ':')
	if i < 0 {
		return abbrID{}
	}
	group, num := id[:i], id[i+1:]
	rank, ok := a.groups[group]
	if !ok {
		rank = a.rank(id[:i+1])
		if a.groups == nil {
			a.groups = map[string]uint64{}
		}
		a.groups[strings.Clone(group)] = rank
	}
	if rank == 0 {
		return abbrID{}
	}
	return abbrID{rank<<(64-abbrRankBits) | bytesAt(num, 0, 6), bytesAt(num, 6, 8)}
}

// bytesAt is s[from:from+n] big-endian, zero-padded past s's end.
func bytesAt(s string, from, n int) uint64 {
	var w uint64
	for j := from; j < from+n; j++ {
		w <<= 8
		if j < len(s) {
			w |= uint64(s[j])
		}
	}
	return w
}

// rank gives key (a group and its ':') a rank between its neighbours',
// 0 when none is free.
func (a *abbreviator) rank(key string) uint64 {
	i, _ := slices.BinarySearchFunc(a.ranked, key, func(r rankedGroup, k string) int { return strings.Compare(r.key, k) })
	lo, hi := uint64(0), uint64(1)<<abbrRankBits
	if i > 0 {
		lo = a.ranked[i-1].rank
	}
	if i < len(a.ranked) {
		hi = a.ranked[i].rank
	}
	if hi-lo < 2 {
		return 0
	}
	r := lo + (hi-lo)/2
	a.ranked = slices.Insert(a.ranked, i, rankedGroup{strings.Clone(key), r})
	return r
}
