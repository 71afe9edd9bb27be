// Package indexertest holds producers' output to what the indexer takes:
// a pipeline that publishes an event the indexer sends to the dead-letter
// topic has lost that event's data, so the pipelines' tests check what
// they emit here.
package indexertest

import (
	"context"
	"testing"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel/memory"
)

// Reject is an event that did not pass: its place in the list, its JSON
// and why.
type Reject struct {
	Index  int
	Event  string
	Reason string
}

// Rejects returns the events of envs that are not what a pipeline may
// publish: refused by indexer.Check (what `permitd publish --dry-run`
// checks: the schema, the decoder, the projection's rules), or sent to
// the dead-letter sink by an indexer writing to an empty memory store
// (what only the locations tell).
// The indexer is handed the locations first and settled, then the other
// events in their order, in batches of up to 512: a replay's order.
func Rejects(tb testing.TB, envs []events.Envelope) []Reject {
	tb.Helper()
	var out []Reject
	var locs, rest []indexer.Message
	for i, env := range envs {
		raw, err := env.AppendJSON(nil)
		if err != nil {
			out = append(out, Reject{Index: i, Reason: "encode: " + err.Error()})
			continue
		}
		if err := indexer.Check(raw); err != nil {
			out = append(out, Reject{Index: i, Event: string(raw), Reason: err.Error()})
			continue
		}
		topic, err := events.TopicFor(env.Type)
		if err != nil {
			out = append(out, Reject{Index: i, Event: string(raw), Reason: err.Error()})
			continue
		}
		// The offset is the event's place in envs, for a dead letter's Reject.
		m := indexer.Message{Topic: topic, Offset: int64(i), Key: []byte(env.EntityID), Value: raw}
		if env.Type.Family() == "location" {
			locs = append(locs, m)
		} else {
			rest = append(rest, m)
		}
	}
	ix, err := indexer.New(indexer.Params{
		Writer: memory.New(memory.Params{}),
		DeadLetter: func(_ context.Context, m indexer.Message, reason error) error {
			out = append(out, Reject{Index: int(m.Offset), Event: string(m.Value), Reason: "dead letter: " + reason.Error()})
			return nil
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	handle := func(msgs []indexer.Message) {
		for lo := 0; lo < len(msgs); lo += 512 {
			if err := ix.HandleBatch(ctx, msgs[lo:min(lo+512, len(msgs))]); err != nil {
				tb.Fatal(err)
			}
		}
	}
	handle(locs)
	if err := ix.Settle(ctx); err != nil {
		tb.Fatal(err)
	}
	handle(rest)
	return out
}

// Check fails tb with the first few rejects of envs (Rejects).
func Check(tb testing.TB, envs []events.Envelope) {
	tb.Helper()
	rejects := Rejects(tb, envs)
	for i, r := range rejects {
		if i == 5 {
			tb.Errorf("and %d more", len(rejects)-i)
			break
		}
		tb.Errorf("event %d: %s\n%s", r.Index, r.Reason, r.Event)
	}
	if len(rejects) > 0 {
		tb.FailNow()
	}
}

// CheckImport runs an importer with an emit that keeps what it emits:
// it fails tb when the importer returns an error (an importer counts a bad
// row and goes on; it fails only on what it cannot read), when it emitted
// other than n events (its report's count), or when an event is rejected
// (Check).
func CheckImport(tb testing.TB, run func(emit func(events.Envelope) error) (n int, err error)) {
	tb.Helper()
	var envs []events.Envelope
	n, err := run(func(env events.Envelope) error {
		envs = append(envs, env)
		return nil
	})
	if err != nil {
		tb.Fatalf("the import failed on its rows: %v", err)
	}
	if len(envs) != n {
		tb.Fatalf("%d events emitted, the report says %d", len(envs), n)
	}
	Check(tb, envs)
}
