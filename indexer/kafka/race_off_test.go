//go:build !race

package kafka

// raceDetector: the tests run under -race (make test's second pass).
const raceDetector = false
