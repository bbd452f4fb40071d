package follow

import (
	"slices"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/exactlyonce"
)

// The follower's group is a layer: an exactly-once inner source puts its
// transactional group beneath it.
var _ exactlyonce.Layer = (*group)(nil)

// handedOn is the group beneath the follower's in a unit test: it records
// the offsets handed to it and never asks for a pause.
type handedOn struct {
	sluice.Group
	got []int64
}

func (h *handedOn) Assign([]sluice.TopicPartition) error { return nil }

func (h *handedOn) Deliver(_ sluice.TopicPartition, recs []sluice.Record) bool {
	for _, r := range recs {
		h.got = append(h.got, r.Offset)
	}
	return false
}

func (h *handedOn) Resumable() []sluice.TopicPartition { return nil }

func records(tp sluice.TopicPartition, from, to int64) []sluice.Record {
	var out []sluice.Record
	for o := from; o < to; o++ {
		out = append(out, sluice.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: o})
	}
	return out
}

// Rewound drops what the follower holds of a partition the group beneath
// sought back: the records fetched again from the committed offset are
// handed on in order, without the stale ones ahead of them, and the
// partition the source paused for the follower is listed as resumable.
func TestRewoundDropsHeldRecords(t *testing.T) {
	tp := sluice.TopicPartition{Topic: "in", Partition: 0}
	beneath := &handedOn{}
	g := newGroup(nil, newShared(), nil)
	g.SetInner(beneath)
	if g.Inner() != sluice.Group(beneath) {
		t.Fatalf("Inner = %T, want the group set", g.Inner())
	}
	if err := g.Assign([]sluice.TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	g.parts[tp].leaders = 2
	if !g.Deliver(tp, records(tp, 0, 4)) {
		t.Fatal("Deliver holding records 2 and 3 asked for no pause")
	}
	g.Rewound([]sluice.TopicPartition{tp})
	if n := len(g.parts[tp].held); n != 0 {
		t.Fatalf("%d records held after Rewound, want 0", n)
	}
	if got := g.Resumable(); !slices.Equal(got, []sluice.TopicPartition{tp}) {
		t.Fatalf("Resumable after Rewound = %v, want [%v]", got, tp)
	}
	g.Deliver(tp, records(tp, 0, 4)) // fetched again from the committed offset
	g.parts[tp].leaders = 4
	g.Resumable()
	if want := []int64{0, 1, 0, 1, 2, 3}; !slices.Equal(beneath.got, want) {
		t.Fatalf("handed on %v, want %v", beneath.got, want)
	}
}
