package events_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/permitd/permitd/events"
)

func TestTopicFor(t *testing.T) {
	tests := []struct {
		typ  events.Type
		want string
	}{
		{events.LocationUpserted, "permitd.locations.v1"},
		{events.LocationDeleted, "permitd.locations.v1"},
		{events.PermitUpserted, "permitd.permits.v1"},
		{events.PropertyDeleted, "permitd.properties.v1"},
		{events.GeoSignalUpserted, "permitd.geo-signals.v1"},
		{events.LeadDeleted, "permitd.permit-leads.v1"},
		{events.CatalogUpserted, "permitd.catalog.v1"},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			got, err := events.TopicFor(tt.typ)
			if err != nil || got != tt.want {
				t.Fatalf("TopicFor(%s) = %q, %v; want %q", tt.typ, got, err, tt.want)
			}
		})
	}
	if _, err := events.TopicFor("location.renamed"); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("unknown type: err = %v, want ErrInvalid", err)
	}
}

// Every event type has a topic, every topic serves one family, and names
// are legal Kafka names that never mix '.' and '_' (Kafka maps both to
// the same metric name).
func TestTopicsCoverEveryTypeWithLegalNames(t *testing.T) {
	legal := regexp.MustCompile(`^[a-zA-Z0-9.-]{1,249}$`)
	seen := map[string]string{}
	for _, s := range events.TopicSpecs {
		if !legal.MatchString(s.Name) || strings.Contains(s.Name, "_") {
			t.Errorf("topic %q: not a legal underscore-free name", s.Name)
		}
		if !strings.HasSuffix(s.Name, ".v1") || s.Partitions < 1 {
			t.Errorf("topic %q: want the .v1 suffix and at least one partition", s.Name)
		}
		if f, dup := seen[s.Name]; dup {
			t.Errorf("topic %q serves %s and %s", s.Name, f, s.Family)
		}
		seen[s.Name] = s.Family
	}
	for _, typ := range events.Types {
		topic, err := events.TopicFor(typ)
		if err != nil || seen[topic] != typ.Family() {
			t.Errorf("%s: topic %q (%v) serves %q", typ, topic, err, seen[topic])
		}
	}
	if len(events.Topics()) != len(events.TopicSpecs) || events.DeadLetterTopic != "permitd.deadletter.v1" {
		t.Error("Topics or DeadLetterTopic changed")
	}
}
