package franz

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A topic that is neither deleted nor recreated, which one Metadata
// answer calls unknown (UNKNOWN_TOPIC_OR_PARTITION: what a broker whose
// metadata lags answers for a topic it does not know yet, and which kgo
// itself treats as retriable until it persists). The commit's check of
// the topic IDs must not take that one answer for a deletion: the
// partition is not lost, no record is delivered twice, and the group's
// commit is exact.
func TestSourceTopicUnknownInOneMetadataAnswerIsNotGone(t *testing.T) {
	b := kafkatest.NewKfake(t)
	const topic, group = "orders", "g"
	b.CreateTopic(t, topic, 1)
	b.Produce(t, topic, kafkadriver.Numbered("r-%d", 0, 5)...)

	var answered atomic.Bool
	answeredCh := make(chan struct{})
	var processed atomic.Int32
	// arm makes the next Metadata request naming just the topic without
	// auto-creation (the commit's check) answered with the topic unknown.
	arm := func() {
		b.Cluster().ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
			mr := req.(*kmsg.MetadataRequest)
			if len(mr.Topics) != 1 || mr.Topics[0].Topic == nil || *mr.Topics[0].Topic != topic || mr.AllowAutoTopicCreation {
				b.Cluster().KeepControl() // not the check: wait for it
				return nil, nil, false
			}
			if answered.CompareAndSwap(false, true) {
				close(answeredCh)
			}
			resp := req.ResponseKind().(*kmsg.MetadataResponse)
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(topic), kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, rt)
			return resp, nil, true
		})
	}
	seen := make(chan string, 64)
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			if processed.Add(1) == 5 {
				arm() // the commit of what was processed checks the IDs after this
			}
			seen <- fmt.Sprintf("%s@%d", r.Value, r.Offset)
			return nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, newRecreateSource(t, b), build) }()

	got := map[string]int{}
	deadline := time.After(kafkadriver.RecreateWait)
	// collect counts deliveries until n records were delivered.
	collect := func(n int) {
		t.Helper()
		for len(got) < n {
			select {
			case v := <-seen:
				got[v]++
			case err := <-done:
				t.Fatalf("Run returned %v", err)
			case <-deadline:
				t.Fatalf("delivered %v, the unknown answer given: %v", got, answered.Load())
			}
		}
	}
	collect(5)
	select {
	case <-answeredCh:
	case err := <-done:
		t.Fatalf("Run returned %v", err)
	case <-deadline:
		t.Fatal("the commit's check of the topic IDs was not answered")
	}
	b.WaitCommitted(t, group, topic, map[int32]int64{0: 5})
	// Five more records: each delivered once, after the first five.
	b.Produce(t, topic, kafkadriver.Numbered("r-%d", 5, 10)...)
	collect(10)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	for len(seen) > 0 {
		got[<-seen]++
	}
	for i := range 10 {
		if v := fmt.Sprintf("r-%d@%d", i, i); got[v] != 1 {
			t.Errorf("record %s delivered %d times, want once (all: %v)", v, got[v], got)
		}
	}
	if c := b.Committed(t, group, topic); c[0] != 10 || len(c) != 1 {
		t.Errorf("committed offsets of %s = %v, want {0: 10}", topic, c)
	}
}
