package follow_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// The follower's group reports the runtime's saturation: true while the
// record it handed on fills the in-flight budget (WithMaxInFlight(1)),
// false before and once the record finished. A runtime's group wrapped
// in one that does not tell is never saturated. Records the follower
// holds for the leaders do not make it saturated.
func TestSaturatedIsTheRuntimes(t *testing.T) {
	for _, c := range []struct {
		name   string
		hidden bool
	}{{"runtime", false}, {"wrapped group that does not tell", true}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				leaders := newStubLeaders()
				leaders.set("in", 0, 1)
				pr := &probeSource{calls: make(chan func(sluice.Group))}
				f, err := follow.New(pr, leaders, follow.WithInterval(interval))
				if err != nil {
					t.Fatal(err)
				}
				var src sluice.Source = f
				if c.hidden {
					src = hidingSource{f}
				}
				release := make(chan struct{})
				run := testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
					return stages.Each(in, func(ctx context.Context, _ sluice.Record) error {
						select {
						case <-release:
							return nil
						case <-ctx.Done():
							return ctx.Err()
						}
					})
				}, pipeline.WithMaxInFlight(1))
				rec := func(o int64) []sluice.Record {
					return []sluice.Record{{Topic: "in", Partition: 0, Offset: o}}
				}
				pr.do(func(g sluice.Group) {
					checkSaturated(t, g, false, "before any record")
					if err := g.Assign([]sluice.TopicPartition{tp("in", 0)}); err != nil {
						t.Error(err)
					}
				})
				synctest.Wait() // the leaders read
				pr.do(func(g sluice.Group) {
					g.Deliver(tp("in", 0), rec(0)) // handed on
					g.Deliver(tp("in", 0), rec(1)) // held: the leaders did not commit it
				})
				synctest.Wait() // record 0 waits in its stage
				pr.do(func(g sluice.Group) { checkSaturated(t, g, !c.hidden, "with record 0 in flight") })
				close(release)
				synctest.Wait()
				pr.do(func(g sluice.Group) { checkSaturated(t, g, false, "once record 0 finished, record 1 held") })
				if err := run.Stop(t); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// hidingSource runs its source with the group Run got wrapped in one
// that has the sluice.Group methods only.
type hidingSource struct{ sluice.Source }

func (s hidingSource) Run(ctx context.Context, g sluice.Group) error {
	return s.Source.Run(ctx, struct{ sluice.Group }{g})
}

// probeSource is a sluice.Source that runs the calls of do on its poll
// loop, with the group Run got, and shuts the group down when ctx is
// done.
type probeSource struct{ calls chan func(sluice.Group) }

func (p *probeSource) Run(ctx context.Context, g sluice.Group) error {
	for {
		select {
		case <-ctx.Done():
			g.Shutdown()
			return nil
		case fn := <-p.calls:
			fn(g)
		}
	}
}

// do runs fn on the poll loop and waits for it.
func (p *probeSource) do(fn func(sluice.Group)) {
	done := make(chan struct{})
	p.calls <- func(g sluice.Group) { fn(g); close(done) }
	<-done
}

// checkSaturated checks what g reports as a source asks it: by a type
// assertion, a group without the method being never saturated.
func checkSaturated(t *testing.T, g sluice.Group, want bool, when string) {
	t.Helper()
	s, ok := g.(interface{ Saturated() bool })
	if got := ok && s.Saturated(); got != want {
		t.Errorf("%s: saturated = %v (has Saturated: %v), want %v", when, got, ok, want)
	}
}
