package gen

import (
	"math"
	"strconv"
	"time"

	"github.com/permitd/permitd/events"
)

// streets are the street lines of generated addresses, already in the
// address package's normal form.
var streets = func() []string {
	names := []string{
		"MAIN", "OAK", "PINE", "MAPLE", "CEDAR", "ELM", "WASHINGTON", "LAKE",
		"HILL", "PARK", "1ST", "2ND", "3RD", "4TH", "5TH", "6TH", "7TH", "8TH",
		"9TH", "10TH", "LINCOLN", "JEFFERSON", "MADISON", "FRANKLIN", "CHURCH",
		"RIVER", "SUNSET", "HIGHLAND", "WALNUT", "CHESTNUT", "SPRING", "UNION",
		"MARKET", "BROAD", "JACKSON", "ADAMS", "WILLOW", "MEADOW", "RIDGE", "VALLEY",
	}
	suffixes := []string{"ST", "AVE", "RD", "DR", "LN", "BLVD", "WAY", "PL", "CT"}
	out := make([]string, 0, len(names)*len(suffixes))
	for _, s := range suffixes {
		for _, n := range names {
			out = append(out, n+" "+s)
		}
	}
	return out
}()

// workKind is one kind of generated work.
type workKind struct {
	workType string
	share    float64 // of all permits
	median   float64 // valuation, USD
	sigma    float64 // of log valuation
	// permit types and actions to choose from (same index)
	permitTypes  []string
	actions      []string
	descriptions []string
	reviewDays   [2]int // application to issue, min and max
	workDays     [2]int // issue to completion, min and max
}

var kinds = []workKind{
	{
		workType: events.WorkAdditionAlter, share: 0.40, median: 45000, sigma: 1.0,
		permitTypes: []string{"Building"}, actions: []string{"Addition/Alteration"},
		descriptions: []string{
			"Interior alterations to existing single-family residence",
			"Kitchen and bathroom remodel",
			"Construct rear addition to existing residence",
			"Tenant improvement to existing commercial space",
			"Replace deck and stairs",
			"Second-story addition to existing residence",
		},
		reviewDays: [2]int{1, 90}, workDays: [2]int{30, 240},
	},
	{
		workType: events.WorkMEP, share: 0.30, median: 8000, sigma: 0.8,
		permitTypes: []string{"Mechanical", "Electrical", "Plumbing"},
		actions:     []string{"Mechanical", "Electrical", "Plumbing"},
		descriptions: []string{
			"Replace furnace and install heat pump",
			"Upgrade electrical service to 200 amps",
			"Replace water heater",
			"Install rooftop solar photovoltaic system",
			"Repipe residence",
			"Install EV charger circuit",
		},
		reviewDays: [2]int{0, 14}, workDays: [2]int{7, 60},
	},
	{
		workType: events.WorkNewConstruction, share: 0.15, median: 350000, sigma: 0.9,
		permitTypes: []string{"Building"}, actions: []string{"New"},
		descriptions: []string{
			"Construct new single-family residence with attached garage",
			"Construct new townhouse building",
			"Construct detached accessory dwelling unit",
			"Construct new multifamily apartment building",
			"Construct new commercial building",
		},
		reviewDays: [2]int{30, 240}, workDays: [2]int{180, 600},
	},
	{
		workType: events.WorkDemolition, share: 0.08, median: 20000, sigma: 0.8,
		permitTypes: []string{"Demolition"}, actions: []string{"Demolition"},
		descriptions: []string{
			"Demolish existing single-family residence",
			"Demolish detached garage",
			"Demolish existing commercial structure",
		},
		reviewDays: [2]int{1, 45}, workDays: [2]int{7, 60},
	},
	{
		workType: events.WorkGrading, share: 0.07, median: 60000, sigma: 0.9,
		permitTypes: []string{"Site Development"}, actions: []string{"Grading"},
		descriptions: []string{
			"Grading and excavation for new construction",
			"Site preparation, clearing and drainage",
			"Install retaining wall and regrade lot",
		},
		reviewDays: [2]int{7, 120}, workDays: [2]int{30, 180},
	},
}

var contractors = []string{
	"Summit Builders LLC", "Evergreen Construction Inc", "Cascade Remodeling", "Keystone Contractors",
	"Pioneer Electric Co", "Blue Ridge Plumbing", "Harbor Mechanical", "Northwind Homes",
	"Redwood Design Build", "Granite State Construction", "Lakeside Renovations", "Ironwood Excavating",
}

const (
	window         = 3 * 365 // days of issue dates up to Now
	inReviewShare  = 0.04    // not yet issued
	completedShare = 0.85    // of permits whose work should be done
	expiryDays     = 548     // about 18 months
)

// permit fills p with permit i at the given address.
func (g *generator) permit(p *events.Permit, i int, line string, pl *place, zip string, lat, lon float64, propID string) {
	r := g.rng
	k := &kinds[len(kinds)-1]
	x := r.Float64()
	for j := range kinds {
		if x < kinds[j].share {
			k = &kinds[j]
			break
		}
		x -= kinds[j].share
	}
	t := r.IntN(len(k.permitTypes))
	val := math.Round(k.median * math.Exp(k.sigma*r.NormFloat64()))
	val = math.Max(100, val)

	*p = events.Permit{
		PermitNumber: "SYN-" + strconv.FormatInt(g.seed, 10) + "-" + strconv.Itoa(i+1),
		PermitType:   k.permitTypes[t],
		WorkType:     k.workType,
		ActionType:   k.actions[t],
		Description:  k.descriptions[r.IntN(len(k.descriptions))],
		Valuation:    &val,
		Address: events.PermitAddress{
			Line: line, City: pl.city, State: pl.state,
			Zipcode: zip, ZipSource: "source", ZipConfidence: 1,
		},
		Lat: &lat, Lon: &lon,
		PropertyID: propID,
		Source:     Source,
	}
	if r.Float64() < 0.6 {
		p.Contractor = contractors[r.IntN(len(contractors))]
	}
	if k.workType == events.WorkNewConstruction {
		units := 1
		switch y := r.Float64(); {
		case y < 0.15:
			units = 2 + r.IntN(3)
		case y < 0.20:
			units = 5 + r.IntN(96)
		}
		p.HousingUnits = &units
	}

	day := func(t time.Time) string { return t.Format(time.DateOnly) }
	between := func(b [2]int) int { return b[0] + r.IntN(b[1]-b[0]+1) }
	if r.Float64() < inReviewShare {
		applied := g.now.AddDate(0, 0, -r.IntN(120))
		p.ApplicationDate = day(applied)
		p.Status = "In Review"
		return
	}
	issued := g.now.AddDate(0, 0, -r.IntN(window+1))
	p.IssueDate = day(issued)
	p.ApplicationDate = day(issued.AddDate(0, 0, -between(k.reviewDays)))
	p.ExpirationDate = day(issued.AddDate(0, 0, expiryDays))
	done := issued.AddDate(0, 0, between(k.workDays))
	complete := r.Float64() < completedShare
	switch {
	case !done.After(g.now) && complete:
		p.Status = "Completed"
		p.CompletionDate = day(done)
	case g.now.Sub(issued) > expiryDays*24*time.Hour:
		p.Status = "Expired"
	default:
		p.Status = "Issued"
	}
}
