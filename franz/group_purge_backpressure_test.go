package franz

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// A group source consumes a deleted (and recreated) topic, orders, anew
// while another topic, stays, is paused by backpressure: its graph holds
// every record, the runtime's in-flight limit is reached and the source
// paused stays' partition in the client. The purge of orders from the
// client waits on kgo's metadata loop (see purgeWait), then ends
// (resuming orders, which kgo pauses by topic, apart from the
// partitions the source paused) while stays is still paused. Once the
// graph lets the records go, every record of stays must be delivered
// once, in order, and committed exactly, and orders consumed anew from
// the start of the new topic.
func TestSourceResumesABackpressuredTopicAfterAPurge(t *testing.T) {
	const (
		group = "g"
		n     = 300 // records of stays: many times the in-flight limit
		limit = 8
	)
	p := newPurgeWait(t, 2*time.Second)
	p.b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})
	open := make(chan struct{})
	seen := make(chan string, 2*n)
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
			if r.Topic == "stays" {
				select {
				case <-open:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			seen <- topicValueOffset(r)
			return nil
		})
	}
	pc := &pauseCounter{paused: map[sluice.TopicPartition]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, p.src, build, pipeline.WithMaxInFlight(limit), pipeline.WithHooks(pc))
	}()
	got := map[string]int{}
	await := recordAwaiter(t, seen, done, time.After(recreateWait), recreateWait, got)
	await("orders:old-0@0")
	p.b.WaitCommitted(t, group, "orders", map[int32]int64{0: 1})

	recs := make([]sluice.Record, n)
	for i := range recs {
		recs[i] = sluice.Record{Value: fmt.Appendf(nil, "stay-%d", i)}
	}
	produceFresh(t, p.b, "stays", recs...)
	deadline := time.After(recreateWait)
	for pc.count() == 0 {
		select {
		case err := <-done:
			t.Fatalf("Run returned %v before stays was paused", err)
		case <-deadline:
			t.Fatalf("stays not paused within %v", recreateWait)
		case <-time.After(10 * time.Millisecond):
		}
	}

	p.recreateOrders(t, done)
	close(p.release)
	produceFresh(t, p.b, "orders", sluice.Record{Value: []byte("new-0")})
	close(open)
	want := []string{"orders:new-0@0"}
	for i := range n {
		want = append(want, fmt.Sprintf("stays:stay-%d@%d", i, i))
	}
	await(want...)
	p.b.WaitCommitted(t, group, "stays", map[int32]int64{0: n})
	p.b.WaitCommitted(t, group, "orders", map[int32]int64{0: 1})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(recreateWait):
		t.Fatalf("Run did not return within %v", recreateWait)
	}
	awaitBackground(t, &p.src.background)
	for len(seen) > 0 {
		got[<-seen]++
	}
	for rec, k := range got {
		if k != 1 {
			t.Errorf("%s delivered %d times, want once", rec, k)
		}
	}
}
