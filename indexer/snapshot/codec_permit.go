package snapshot

import (
	"encoding/binary"
	"math"
	"reflect"

	"github.com/permitd/permitd/readmodel"
)

// Permits are most of a snapshot, and decoding them is on a restart's
// path: readmodel.Permit has a decoder written out by hand, which reads
// the bytes the reflective codec writes (codec.go) without a reflect call
// per field, and allocates less: a permit's three numbers in one
// allocation, and the geo links of many permits from one shared array.
// Its strings come from the stream's string table or are literals
// (codec.go); which, the bytes say. It is used only while Permit's exported fields are the ones it was
// written for (permitFields, checked when the codec is built); any change
// to the type falls back to the reflective decoder, which is always
// right, until this one is brought up to date (TestPermitDecoder).

var permitT = reflect.TypeFor[readmodel.Permit]()

// permitReflective is the reflective decoder decodePermit replaces (for
// its tests).
var permitReflective func(*decoder, reflect.Value)

// permitFields are Permit's exported fields, and then Address's and
// GeoLink's, as decodePermit reads them.
var permitFields = []string{
	"PermitID string", "PermitNumber string", "PermitType string", "WorkType string", "Status string",
	"ApplicationDate string", "IssueDate string", "CompletionDate string", "RawDescription string",
	"Contractor string", "Valuation *float64", "Source string", "Address readmodel.Address",
	"Lat *float64", "Lon *float64", "PropertyID string", "GeoLinks []readmodel.GeoLink", "Version int64",
	"FullAddress string", "City string", "State string", "Zipcode string", "County string", "Jurisdiction string",
	"GeoID string", "GeoType readmodel.GeoType", "Confidence float64", "Method string",
}

// fieldList is the exported fields of each struct type, in order.
func fieldList(ts ...reflect.Type) []string {
	var out []string
	for _, t := range ts {
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				out = append(out, f.Name+" "+f.Type.String())
			}
		}
	}
	return out
}

// permitDecoderFits reports whether decodePermit reads Permit as it is.
func permitDecoderFits() bool {
	return reflect.DeepEqual(fieldList(permitT, reflect.TypeFor[readmodel.Address](), reflect.TypeFor[readmodel.GeoLink]()), permitFields)
}

// Properties, the next most numerous documents, have one too.

var propertyT = reflect.TypeFor[readmodel.Property]()

// propertyReflective is the reflective decoder decodeProperty replaces.
var propertyReflective func(*decoder, reflect.Value)

// propertyFields are Property's exported fields, and then GeoLink's.
var propertyFields = []string{
	"PropertyID string", "CanonicalAddress string", "NormalizedAddress string", "City string", "State string",
	"Zipcode string", "ParcelID string", "Lat *float64", "Lon *float64", "GeoLinks []readmodel.GeoLink", "Version int64",
	"GeoID string", "GeoType readmodel.GeoType", "Confidence float64", "Method string",
}

func propertyDecoderFits() bool {
	return reflect.DeepEqual(fieldList(propertyT, reflect.TypeFor[readmodel.GeoLink]()), propertyFields)
}

// decodeProperty is the reflective decoder of a readmodel.Property,
// written out (propertyFields).
func decodeProperty(d *decoder, v reflect.Value) {
	p := v.Addr().Interface().(*readmodel.Property)
	p.PropertyID = d.string()
	p.CanonicalAddress = d.string()
	p.NormalizedAddress = d.string()
	p.City = d.string()
	p.State = d.string()
	p.Zipcode = d.string()
	p.ParcelID = d.string()
	nums := new([2]float64) // Lat, Lon
	p.Lat = d.floatPtr(&nums[0])
	p.Lon = d.floatPtr(&nums[1])
	p.GeoLinks = d.geoLinks()
	if d.shapes != nil {
		d.shapes.Properties = append(d.shapes.Properties, d.list)
	}
	p.Version = d.varint()
}

func (d *decoder) varint() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) float() float64 {
	if p := d.take(8); p != nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(p))
	}
	return 0
}

// floatPtr reads a *float64 into *slot and returns slot, or nil.
func (d *decoder) floatPtr(slot *float64) *float64 {
	p := d.take(1)
	if p == nil || p[0] == 0 {
		return nil
	}
	*slot = d.float()
	return slot
}

// linkArena is the array decodePermit takes geo links from.
const linkArena = 1024

// decodePermit is the reflective decoder of a readmodel.Permit, written
// out (permitFields).
func decodePermit(d *decoder, v reflect.Value) {
	p := v.Addr().Interface().(*readmodel.Permit)
	p.PermitID = d.string()
	p.PermitNumber = d.string()
	p.PermitType = d.string()
	p.WorkType = d.string()
	p.Status = d.string()
	p.ApplicationDate = d.string()
	p.IssueDate = d.string()
	p.CompletionDate = d.string()
	p.RawDescription = d.string()
	p.Contractor = d.string()
	nums := new([3]float64) // Valuation, Lat, Lon
	p.Valuation = d.floatPtr(&nums[0])
	p.Source = d.string()
	a := &p.Address
	a.FullAddress = d.string()
	a.City = d.string()
	a.State = d.string()
	a.Zipcode = d.string()
	a.County = d.string()
	a.Jurisdiction = d.string()
	p.Lat = d.floatPtr(&nums[1])
	p.Lon = d.floatPtr(&nums[2])
	p.PropertyID = d.string()
	p.GeoLinks = d.geoLinks()
	if d.shapes != nil {
		d.shapes.Permits = append(d.shapes.Permits, d.list)
	}
	p.Version = d.varint()
}
