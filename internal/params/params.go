// Package params holds what constructors share in reading their inputs:
// a zero (or negative) number in a Params struct means "the default".
package params

// Default sets *v to d when *v is zero or negative.
func Default[T ~int | ~int32 | ~int64 | ~float64](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
