package memory

import (
	"github.com/permitd/permitd/readmodel"
)

// displayNames spell the *_norm keys that stats count under as location
// detail spells them: the Name of the city or county location whose
// normalised name is the key ("king county" -> "King County"). A key no
// location spells is shown as it is; ZIP keys are their five digits.
type displayNames struct {
	city, county map[string]string
}

func newDisplayNames() displayNames {
	return displayNames{city: map[string]string{}, county: map[string]string{}}
}

func (d displayNames) table(t readmodel.GeoType) map[string]string {
	switch t {
	case readmodel.GeoCity:
		return d.city
	case readmodel.GeoCounty:
		return d.county
	}
	return nil
}

// put records a location's spelling (the side's writer).
func (d displayNames) put(l readmodel.Location) {
	if m := d.table(l.GeoType); m != nil && l.Name != "" {
		m[readmodel.NormName(l.Name)] = l.Name
	}
}

// remove forgets a deleted location's spelling when it is the one kept.
func (d displayNames) remove(l readmodel.Location) {
	m := d.table(l.GeoType)
	if m == nil {
		return
	}
	if k := readmodel.NormName(l.Name); m[k] == l.Name {
		delete(m, k)
	}
}

func spell(m map[string]string, key string) string {
	if s, ok := m[key]; ok {
		return s
	}
	return key
}
