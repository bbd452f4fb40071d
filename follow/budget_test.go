package follow_test

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// budgetProbe is a source that reads the in-flight limits of the Group it
// is given, then waits for ctx and shuts down.
type budgetProbe struct {
	records int
	bytes   int64
	ok      bool
	seen    chan struct{}
}

func (p *budgetProbe) Run(ctx context.Context, g sluice.Group) error {
	b, ok := g.(interface {
		MaxInFlight() int
		MaxInFlightBytes() int64
	})
	if ok {
		p.ok, p.records, p.bytes = true, b.MaxInFlight(), b.MaxInFlightBytes()
	}
	close(p.seen)
	<-ctx.Done()
	g.Shutdown()
	return nil
}

// The Group a follower hands its inner source tells the runtime's
// in-flight limits, as the runtime's own does.
func TestFollowerPassesTheBudgetOn(t *testing.T) {
	probe := &budgetProbe{seen: make(chan struct{})}
	src, err := follow.New(probe, newStubLeaders())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(in)
		}, pipeline.WithMaxInFlight(1234), pipeline.WithMaxInFlightBytes(4<<20))
	}()
	<-probe.seen
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !probe.ok || probe.records != 1234 || probe.bytes != 4<<20 {
		t.Errorf("inner source saw limits %v: %d records, %d bytes; want 1234 records, %d bytes", probe.ok, probe.records, probe.bytes, 4<<20)
	}
}
