package memory

// SetSparseMin sets the record count from which a lead day cell keeps its
// sparse counts (lead_cells.go), for stores made afterwards; it returns
// the undo.
func SetSparseMin(n int) func() {
	old := sparseMin
	sparseMin = n
	return func() { sparseMin = old }
}
