package apikey

import "sort"

// The plans. They live in code so that a plan change ships with a
// release and reviews like one; a stored key names its plan, and the
// plan's current limits apply at every request.
var (
	PlanFree       = Plan{Name: "free", RatePerSecond: 2, Burst: 10, MonthlyQuota: 10_000}
	PlanStandard   = Plan{Name: "standard", RatePerSecond: 25, Burst: 50, MonthlyQuota: 1_000_000}
	PlanEnterprise = Plan{Name: "enterprise", RatePerSecond: 250, Burst: 500, MonthlyQuota: 50_000_000}
)

// plans is every plan a key may name.
var plans = map[string]Plan{
	PlanFree.Name:       PlanFree,
	PlanStandard.Name:   PlanStandard,
	PlanEnterprise.Name: PlanEnterprise,
	DefaultDevPlan.Name: DefaultDevPlan,
}

// LookupPlan returns the plan called name.
func LookupPlan(name string) (Plan, bool) {
	p, ok := plans[name]
	return p, ok
}

// PlanNames lists the plans, sorted.
func PlanNames() []string {
	out := make([]string, 0, len(plans))
	for n := range plans {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
