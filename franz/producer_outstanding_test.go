package franz_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A Produce stage alone on a franz producer (kgo's default buffer, 50,000
// records) keeps MaxReportBuffer records outstanding while the broker
// refuses them, never more: kgo's promise goroutine then has room for
// every report, and once the broker accepts, every record is delivered
// once and committed.
func TestStageKeepsMaxReportBufferOutstandingOnKgo(t *testing.T) {
	t.Parallel()
	const n = produce.MaxReportBuffer + 3000
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 1)
	b.CreateTopic(t, "out", 1)
	b.Produce(t, "in", input(1, 0, n)...)
	p := newProducer(t, b)
	if got := franz.MaxBuffered(p); got <= produce.MaxReportBuffer {
		t.Fatalf("kgo buffers %d records, want more than %d for this test", got, produce.MaxReportBuffer)
	}
	refused := b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.NotEnoughReplicas, Count: -1})
	r := testkit.Start(t, newSource(t, b.Addrs(), "g", "in"), produceTo(p, "out"))
	deadline := time.Now().Add(wait)
	for franz.ProducerPending(p) < produce.MaxReportBuffer {
		if time.Now().After(deadline) {
			t.Fatalf("%d reports pending after %v, want %d", franz.ProducerPending(p), wait, produce.MaxReportBuffer)
		}
		time.Sleep(time.Millisecond) // polling a real client, with a deadline
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := refused.Wait(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if got := franz.ProducerPending(p); got != produce.MaxReportBuffer {
		t.Errorf("%d records outstanding while the broker refuses them, want %d", got, produce.MaxReportBuffer)
	}
	refused.Remove()
	waitCommitted(t, b, r, "g", "in", map[int32]int64{0: n})
	stop(t, r)
	if out := b.ReadAll(t, "out"); len(out) != n {
		t.Errorf("produced %d records, want %d", len(out), n)
	}
}
