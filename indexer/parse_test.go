package indexer_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// A batch parsed ahead (Parse) ends as the same state as the batch
// handled without: a retry after a failed attempt (its dead-letter sink
// down) decodes its messages again (each parsed event is used once, its payload recycled), a message
// over the size limit, an invalid one and one whose key is not its
// entity_id are dead-lettered, and a later version in the batch wins.
func TestHandleParsedMatchesHandleBatch(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // decoding fans out over parts
	var msgs []indexer.Message
	for i := range 300 {
		id := events.GeoID("city", fmt.Sprintf("C%03d", i))
		msgs = append(msgs, msgOf(t, "permitd.locations.v1", mustEnv(t, events.LocationUpserted, id, 1, events.Location{
			GeoType: "city", Name: fmt.Sprintf("City %d", i), DisplayName: "City, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
		})))
	}
	msgs = append(msgs, msgOf(t, "permitd.locations.v1", mustEnv(t, events.LocationUpserted, events.GeoID("city", "C007"), 2, events.Location{
		GeoType: "city", Name: "Renamed", DisplayName: "Renamed, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
	})))
	big := msgOf(t, "permitd.locations.v1", mustEnv(t, events.LocationUpserted, events.GeoID("city", "BIG"), 1, events.Location{
		GeoType: "city", Name: string(make([]byte, 9000)), DisplayName: "Big", State: "WA", StateName: "Washington",
	}))
	msgs = append(msgs, big, indexer.Message{Topic: "permitd.locations.v1", Value: []byte(`{"schema_version":1`)})
	// A key that is not the entity_id (checked as it is parsed ahead) is
	// dead-lettered; a message without a key is not checked.
	wrongKey := msgOf(t, "permitd.locations.v1", mustEnv(t, events.LocationUpserted, events.GeoID("city", "WRONG"), 1, events.Location{
		GeoType: "city", Name: "Wrong", DisplayName: "Wrong, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
	}))
	wrongKey.Key = []byte(events.GeoID("city", "C001"))
	keyless := msgOf(t, "permitd.locations.v1", mustEnv(t, events.LocationUpserted, events.GeoID("city", "KEYLESS"), 1, events.Location{
		GeoType: "city", Name: "Keyless", DisplayName: "Keyless, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
	}))
	keyless.Key = nil
	msgs = append(msgs, wrongKey, keyless)

	run := func(parsed bool) (*memory.Store, int) {
		store := memory.New(memory.Params{})
		dead, down := 0, true
		ix, err := indexer.New(indexer.Params{Writer: store, MaxMessageBytes: 8192,
			DeadLetter: func(context.Context, indexer.Message, error) error {
				if down {
					down = false
					return errors.New("dead-letter topic down")
				}
				dead++
				return nil
			}})
		require.NoError(t, err)
		batch := append([]indexer.Message(nil), msgs...)
		var p *indexer.Parsed
		if parsed {
			p = ix.Parse(batch)
		}
		require.Error(t, ix.HandleParsed(context.Background(), batch, p), "the first attempt fails")
		require.NoError(t, ix.HandleParsed(context.Background(), batch, p), "the retry")
		return store, dead
	}
	want, wantDead := run(false)
	got, gotDead := run(true)
	require.Equal(t, 3, wantDead, "the retry dead-letters the big, the invalid and the wrongly keyed message")
	require.Equal(t, wantDead, gotDead)
	ctx := context.Background()
	wc, err := want.Counts(ctx)
	require.NoError(t, err)
	gc, err := got.Counts(ctx)
	require.NoError(t, err)
	require.Equal(t, wc, gc)
	require.Equal(t, int64(301), gc[readmodel.KindLocation], "the 300 cities and the keyless one")
	_, err = got.Location(ctx, readmodel.ParseGeoRef(events.GeoID("city", "WRONG")))
	require.ErrorIs(t, err, readmodel.ErrNotFound)
	for i := range 300 {
		ref := readmodel.ParseGeoRef(events.GeoID("city", fmt.Sprintf("C%03d", i)))
		w, err := want.Location(ctx, ref)
		require.NoError(t, err)
		g, err := got.Location(ctx, ref)
		require.NoError(t, err)
		require.Equal(t, w, g)
	}
	l, err := got.Location(ctx, readmodel.ParseGeoRef(events.GeoID("city", "C007")))
	require.NoError(t, err)
	require.Equal(t, "Renamed", l.Name)
}

// ParseInto reuses a Parsed whose slice has room, and the earlier batch's
// events are overwritten, used or not: a batch parsed and never handled
// (a consumer stopping) leaves nothing behind for the next, whose message
// over the size limit (where the earlier batch had an event) is
// dead-lettered. One without room gets a new Parsed.
func TestParseIntoOverwritesAnEarlierBatch(t *testing.T) {
	loc := func(name string, v int64) indexer.Message {
		return msgOf(t, "permitd.locations.v1", mustEnv(t, events.LocationUpserted, events.GeoID("city", name), v, events.Location{
			GeoType: "city", Name: name, DisplayName: name + ", WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
		}))
	}
	var earlier, later []indexer.Message
	for i := range 50 {
		earlier = append(earlier, loc(fmt.Sprintf("E%02d", i), 1))
	}
	big := loc("BIG"+string(make([]byte, 9000)), 1)
	later = append(later, big)
	for i := range 20 {
		later = append(later, loc(fmt.Sprintf("L%02d", i), 1))
	}

	store := memory.New(memory.Params{})
	dead := 0
	ix, err := indexer.New(indexer.Params{Writer: store, MaxMessageBytes: 8192,
		DeadLetter: func(context.Context, indexer.Message, error) error { dead++; return nil }})
	require.NoError(t, err)
	p := ix.ParseInto(nil, earlier) // never handled
	q := ix.ParseInto(p, later)
	require.True(t, p == q, "room for the later batch: the same Parsed")
	require.NoError(t, ix.HandleParsed(context.Background(), later, q))
	require.Equal(t, 1, dead, "the message over the limit is dead-lettered")
	counts, err := store.Counts(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(20), counts[readmodel.KindLocation], "the later batch's locations only")
	_, err = store.Location(context.Background(), readmodel.ParseGeoRef(events.GeoID("city", "E00")))
	require.ErrorIs(t, err, readmodel.ErrNotFound)

	more := append(earlier, loc("M00", 1))
	r := ix.ParseInto(q, more)
	require.True(t, q != r, "no room for 51: a new Parsed")
	require.NoError(t, ix.HandleParsed(context.Background(), more, r))
	counts, err = store.Counts(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(71), counts[readmodel.KindLocation])
}

// A message's key is compared with its entity_id as the message is
// parsed ahead (ParseInto), and not again when it is handled: one whose
// key differs is dead-lettered with the reason HandleBatch gives, one
// without a key is written, and a key that matches is written.
func TestParseIntoChecksKeys(t *testing.T) {
	loc := func(name string) indexer.Message {
		return msgOf(t, "permitd.locations.v1", mustEnv(t, events.LocationUpserted, events.GeoID("city", name), 1, events.Location{
			GeoType: "city", Name: name, DisplayName: name + ", WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
		}))
	}
	wrong, keyless, right := loc("WRONG"), loc("KEYLESS"), loc("RIGHT")
	wrong.Key = []byte(events.GeoID("city", "RIGHT"))
	keyless.Key = nil
	for _, parsed := range []bool{false, true} {
		store := memory.New(memory.Params{})
		var reasons []string
		ix, err := indexer.New(indexer.Params{Writer: store,
			DeadLetter: func(_ context.Context, _ indexer.Message, err error) error {
				reasons = append(reasons, err.Error())
				return nil
			}})
		require.NoError(t, err)
		batch := []indexer.Message{wrong, keyless, right}
		var p *indexer.Parsed
		if parsed {
			p = ix.ParseInto(nil, batch)
		}
		require.NoError(t, ix.HandleParsed(context.Background(), batch, p))
		require.Len(t, reasons, 1, "parsed ahead: %v", parsed)
		require.Contains(t, reasons[0], fmt.Sprintf("message key %q differs from entity_id %q", events.GeoID("city", "RIGHT"), events.GeoID("city", "WRONG")))
		for name, want := range map[string]error{"WRONG": readmodel.ErrNotFound, "KEYLESS": nil, "RIGHT": nil} {
			_, err := store.Location(context.Background(), readmodel.ParseGeoRef(events.GeoID("city", name)))
			require.ErrorIs(t, err, want, "%s, parsed ahead: %v", name, parsed)
		}
	}
}
