package readmodel

// The read model's limits, in one place: the API checks its parameters
// against them (its 422 messages name these figures), the query structs'
// Validate checks them again, and both backends rely on Validate instead
// of retyping the figures.
const (
	// MaxPageLimit bounds Limit of the paged reads (PermitQuery,
	// GeoSignalQuery, LeadQuery): 1..MaxPageLimit. DefaultPageLimit is the
	// API's page size when the request names none.
	MaxPageLimit     = 100
	DefaultPageLimit = 25

	// MaxMatchLimit bounds Limit of the ranked reads (ResolveQuery,
	// PropertyQuery): 1..MaxMatchLimit. DefaultResolveLimit is the API's
	// resolve size when the request names none.
	MaxMatchLimit       = 20
	DefaultResolveLimit = 10

	// StatsTopN is the API's StatsQuery.TopN: the length of the top
	// county, city and ZIP lists.
	StatsTopN = 10

	// MaxMonths bounds the months of a MonthlyQuery window;
	// DefaultMonths is the API's window when the request names no
	// from_date.
	MaxMonths     = 120
	DefaultMonths = 24

	// ExportPage is the page size an export scans with (PermitQuery.Limit
	// of its scan).
	ExportPage = MaxPageLimit
)

// ExportRowCap is the most rows one permit export sends for a plan (by
// its name); a plan not listed gets the free plan's cap.
func ExportRowCap(plan string) int {
	switch plan {
	case "standard":
		return 250_000
	case "enterprise", "development":
		return 5_000_000
	}
	return 10_000
}
