//go:build !race

package indexer_test

// raceDetector: the tests run under -race (make test's second pass).
const raceDetector = false
