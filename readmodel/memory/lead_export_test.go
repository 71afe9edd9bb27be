package memory

// SetSparseMin sets the record count from which a lead day cell keeps its
// sparse counts (lead_cells.go), for stores made afterwards; it returns
// the undo.
func SetSparseMin(n int) func() {
	old := sparseMin
	sparseMin = n
	return func() { sparseMin = old }
}

// SetFenLog sets the top-list keys from which a roll-up's tree logs its
// changes and the least log it folds (rollup_log.go), until the returned
// func restores them.
func SetFenLog(logMin, foldMin int) func() {
	oldLog, oldFold := fenLogMin, fenFoldMin
	fenLogMin, fenFoldMin = logMin, foldMin
	return func() { fenLogMin, fenFoldMin = oldLog, oldFold }
}
