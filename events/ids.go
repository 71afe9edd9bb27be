package events

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strconv"
	"strings"
)

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// GeoID derives the opaque, URL-safe geo_id of a geography from its
// identity: its scope and the key that names it in its source (a USPS state
// code, a county FIPS code, a place id, a ZIP code). The same identity
// always yields the same id, so a rebuild keeps every id.
//
// Identities used by the gazetteer importer:
//
//	state         "WA"
//	county        "53033"           (5-digit FIPS)
//	city          "1840021117"      (simplemaps place id)
//	zip           "98101"
//	jurisdiction  "city:1840021117" (incorporated city) or "county:53033"
func GeoID(scope, identity string) string {
	sum := sha256.Sum256([]byte("geo\x00" + scope + "\x00" + identity))
	return "g" + idEncoding.EncodeToString(sum[:10])
}

// PropertyID derives prop_ + 32 lowercase hex from a property's identity:
// "parcel:<id>" when a parcel is known, else "addr:<normalised address>".
func PropertyID(identity string) string {
	sum := sha256.Sum256([]byte("property\x00" + identity))
	return "prop_" + hex.EncodeToString(sum[:16])
}

// EventID derives a deterministic event id.
func EventID(t Type, entityID string, version int64) string {
	var b strings.Builder
	b.WriteString(string(t))
	b.WriteByte(0)
	b.WriteString(entityID)
	b.WriteByte(0)
	b.WriteString(strconv.FormatInt(version, 10))
	sum := sha256.Sum256([]byte(b.String()))
	return "ev_" + hex.EncodeToString(sum[:12])
}

// PermitDocID is the document id of a permit: its source and the source's
// permit number ("seattle_sdci_commercial:6268348"). Permit numbers are
// unique only within a source.
func PermitDocID(source, permitNumber string) string {
	return source + ":" + permitNumber
}

// IsPermitDocID reports whether id == PermitDocID(source, permitNumber),
// without building that string (the projection and the memory backend
// check it per permit).
func IsPermitDocID(id, source, permitNumber string) bool {
	return len(id) == len(source)+1+len(permitNumber) && id[len(source)] == ':' &&
		id[:len(source)] == source && id[len(source)+1:] == permitNumber
}
