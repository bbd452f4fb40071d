package source

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Under KIP-848 a revoke of a topic that was not recreated (its topic ID
// is the one recorded at assignment) still commits: A has processed every
// record and commits nothing on its own (an hour's commit interval); when
// B joins, A's revoke commits the moved partitions' high watermarks, so B
// starts there and processes nothing again, and A loses nothing.
func TestKIP848RevokeOfAnUnchangedTopicCommits(t *testing.T) {
	t.Parallel()
	b := topicIn(t, kafkatest.NewBroker(t), 4, 100)
	hw := b.HighWatermarks(t, "in")
	src := func() *Source {
		s, err := NewSource(Config{
			GroupConfig: sluice.GroupConfig{
				Brokers:        b.Addrs(),
				Group:          "g",
				Topics:         []string{"in"},
				CommitInterval: time.Hour,
				Logger:         kafkatest.Logger(t),
			},
			Overrides: map[string]any{"group.protocol": "consumer"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	a := newFakeGroup()
	ra := start(t, src(), a)
	a.waitUntil(t, wait, "A consumes all", delivered(4*100))

	bg := newFakeGroup()
	rb := start(t, src(), bg)
	bg.waitUntil(t, wait, "B gets partitions", func(f *fakeGroup) bool { return len(f.assigned) > 0 })
	var moved []TP
	bg.with(func(f *fakeGroup) {
		for tp := range f.assigned {
			moved = append(moved, tp)
		}
	})
	committed := b.Committed(t, "g", "in")
	for _, tp := range moved {
		if got, ok := committed[tp.Partition]; !ok || got != hw[tp.Partition] {
			t.Errorf("partition %d moved to B: committed %d (present %v), want the high watermark %d", tp.Partition, got, ok, hw[tp.Partition])
		}
	}

	if err := rb.stop(t); err != nil {
		t.Fatalf("B Run: %v", err)
	}
	if err := ra.stop(t); err != nil {
		t.Fatalf("A Run: %v", err)
	}
	bg.with(func(f *fakeGroup) {
		if f.total != 0 {
			t.Errorf("B processed %d records, want 0: every record was A's and committed by its revoke", f.total)
		}
	})
	a.with(func(f *fakeGroup) {
		if len(f.revokes) == 0 {
			t.Errorf("A never revoked a partition")
		}
		if len(f.loses) != 0 {
			t.Errorf("A lost partitions %v, want only revokes", f.loses)
		}
	})
	checkExactlyOnce(t, hw, a, bg)
	checkCommitted(t, b, "g", "in")
}
