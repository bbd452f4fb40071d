package franz

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// heldGraph is the graph of the tests of a topic deleted while one of its
// records is in flight: a stage holds the record valued hold until
// release is closed (entered is closed when it arrives), reports each
// record it passes on seen, and passes it on to the graph's end.
type heldGraph struct {
	hold    string
	seen    chan string
	entered chan struct{}
	release chan struct{}
}

// newHeldGraph returns a heldGraph holding the record valued hold, whose
// stage reports each record as key(record), and its builder, whose
// records go on to end.
func newHeldGraph(hold string, key func(sluice.Record) string, end func(pipeline.Stream[sluice.Record]) pipeline.End) (*heldGraph, pipeline.Builder) {
	g := &heldGraph{hold: hold, seen: make(chan string, 64), entered: make(chan struct{}), release: make(chan struct{})}
	return g, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return end(stages.Map(in, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
			if string(r.Value) == g.hold {
				close(g.entered)
				select {
				case <-g.release:
				case <-ctx.Done():
					return r, ctx.Err()
				}
			}
			g.seen <- key(r)
			return r, nil
		}))
	}
}

// waitHeld waits for the held record to arrive, before deadline.
func (g *heldGraph) waitHeld(t *testing.T, deadline <-chan time.Time) {
	t.Helper()
	select {
	case <-g.entered:
	case <-deadline:
		t.Fatalf("%s not delivered", g.hold)
	}
}

// valueOffset names a record "value@offset".
func valueOffset(r sluice.Record) string { return fmt.Sprintf("%s@%d", r.Value, r.Offset) }

// startRun starts pipeline.Run of src with build; the test ends it with
// stopRun(t, cancel, done).
func startRun(t *testing.T, src sluice.Source, build pipeline.Builder) (cancel context.CancelFunc, done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := make(chan error, 1)
	go func() { d <- pipeline.Run(ctx, src, build) }()
	return cancel, d
}

// Client options of the recreated topic tests' sources: the protocol of
// Kafka 3.9 (kgo.MaxVersions), and a KIP-848 group (the consumer group
// protocol, server-side assignment).
var (
	kafka39Protocol = []kgo.Opt{kgo.MaxVersions(kversion.V3_9_0())}
	kip848Group     = []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer())}
)

// newRecreateSource returns a source of topic orders in group g on b
// whose client is made with opts.
func newRecreateSource(t *testing.T, b *kafkatest.Broker, opts ...kgo.Opt) *Source {
	t.Helper()
	src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders"},
		CommitInterval: 100 * time.Millisecond, CloseTimeout: 10 * time.Second, Logger: kafkatest.Logger(t)},
		Opts: opts})
	if err != nil {
		t.Fatal(err)
	}
	return src
}
