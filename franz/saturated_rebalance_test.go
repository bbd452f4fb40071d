package franz

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestSaturatedMemberRebalances: member A's graphs hold every record
// they get until the test releases them, so its in-flight budget
// (WithMaxInFlight(8)) is full and its poll loop takes nothing from kgo.
// Member B joins: the partitions A gives up must be revoked while it is
// saturated (their drain times out, nothing of them is committed) and B
// must consume them from their start to the end; once released, A
// consumes what it kept. Every record is processed once, in order, and
// the commits are exact. "cooperative": kgo's default balancer;
// "kip848": the consumer group protocol (server-side assignment).
func TestSaturatedMemberRebalances(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"cooperative", nil},
		{"kip848", kip848Group},
	} {
		t.Run(c.name, func(t *testing.T) { saturatedRebalance(t, c.opts) })
	}
}

func saturatedRebalance(t *testing.T, opts []kgo.Opt) {
	const (
		topic, group = "sat", "g-sat"
		partitions   = 4
		perPart      = 100
	)
	b := kafkatest.NewBroker(t, kafkatest.WithTopic(topic, partitions))
	producePartitionByPartition(t, b, topic, partitions, perPart, 100)
	seen, seenB := &offsetsSeen{}, &offsetsSeen{}
	g := newGate()
	build := func(member string) pipeline.Builder {
		return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				if member == "A" {
					if err := g.pass(ctx); err != nil {
						return err
					}
				} else {
					seenB.add(r)
				}
				seen.add(r)
				return nil
			})
		}
	}
	runA := testkit.Start(t, newTestSource(t, b, group, topic, opts...), build("A"),
		pipeline.WithMaxInFlight(8), pipeline.WithDrainTimeout(2*time.Second))
	select {
	case <-g.entered:
	case <-runA.Done():
		t.Fatalf("Run of A returned %v", runA.Err())
	case <-time.After(time.Minute):
		t.Fatal("A processed nothing in a minute")
	}
	runB := testkit.Start(t, newTestSource(t, b, group, topic, opts...), build("B"))
	// B gets two of the four partitions; A holds every record it has.
	bDone := func() bool {
		n := 0
		for _, offs := range seenB.byPartition() {
			if len(offs) == perPart {
				n++
			}
		}
		return n == partitions/2
	}
	deadline := time.Now().Add(time.Minute)
	for !bDone() {
		if time.Now().After(deadline) {
			t.Fatalf("B did not consume two partitions to the end in a minute while A was saturated: B processed %v", seenB.byPartition())
		}
		select {
		case <-runA.Done():
			t.Fatalf("Run of A returned %v", runA.Err())
		case <-runB.Done():
			t.Fatalf("Run of B returned %v", runB.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(g.release)
	want := map[int32]int64{}
	for p := range int32(partitions) {
		want[p] = perPart
	}
	b.WaitCommitted(t, group, topic, want)
	if err := runB.Stop(t); err != nil {
		t.Fatal(err)
	}
	if err := runA.Stop(t); err != nil {
		t.Fatal(err)
	}
	checkEveryOffsetInOrder(t, seen.byPartition(), partitions, perPart)
}
