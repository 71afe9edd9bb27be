package memory

import "github.com/permitd/permitd/readmodel"

// Re-links (readmodel.Writer): at an equal version a linked permit,
// property or lead replaces a live unlinked one; every other equal-version write
// stays stale. Only the stale path of a put reaches here, so the ingest
// of new versions pays nothing for the rule.

// replace stores doc over the live document of id when it is stored at
// exactly version and linked(stored) is false, and returns the previous
// document.
func (t *table[T]) replace(id string, version int64, doc T, linked func(T) bool) (prev T, ok bool) {
	r, exists := t.rows[id]
	if !exists || r.deleted || r.version != version || linked(r.doc) {
		return prev, false
	}
	prev, r.doc = r.doc, doc
	return prev, true
}

// linksZip reports whether a link set holds a ZIP link.
func (s *side) linksZip(set uint32) bool {
	for _, l := range s.pi.links.get(set) {
		if l.geo != selfProperty && s.pi.syms.is(l.typ, string(readmodel.GeoZip)) {
			return true
		}
	}
	return false
}

// permitLinked is readmodel.Permit.Linked of a stored permit.
func (s *side) permitLinked(c *cpermit) bool {
	return s.pi.syms.is(c.zip, "") || s.linksZip(c.links)
}

// relinkPermit is putPermit's stale path: c (linked) replaces a live
// unlinked permit of the same version.
func (s *side) relinkPermit(c *cpermit) (prev *cpermit, ok bool) {
	return s.permits.replace(c.id, c.version, c, s.permitLinked)
}

// leadLinked is readmodel.Lead.Linked of a stored lead.
func leadLinked(r *leadRec) bool { return r.lead.Linked() }

// relinksProperty reports whether p (linked) replaces e's live unlinked
// document of the same version.
func (s *side) relinksProperty(e *propEntry, p readmodel.Property) bool {
	return e.state == propLive && e.version == p.Version && p.Linked() &&
		!(s.pi.syms.is(e.doc.zip, "") || s.linksZip(e.doc.links))
}
