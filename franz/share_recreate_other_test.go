package franz

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A share source consuming two topics, one of which is deleted and
// recreated while the graph holds records of it: the records of the
// other topic keep their graph and their acknowledgements (none is
// redelivered, each is acknowledged), and the records of the new topic
// and of the other one are delivered once each.
func TestShareSourceTopicRecreatedOtherTopic(t *testing.T) {
	const group = "g"
	b := kafkatest.NewBroker(t, kafkatest.WithKfakeOptions(kfake.BrokerConfigs(map[string]string{
		"group.share.heartbeat.interval.ms": "100",
	})))
	b.CreateTopic(t, "orders", 1)
	b.CreateTopic(t, "stays", 1)
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")}, sluice.Record{Value: []byte("old-1")})
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-0")}, sluice.Record{Value: []byte("stay-1")})

	seen := make(chan string, 64)
	release := make(chan struct{})
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Pool(in, 8, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
			seen <- fmt.Sprintf("%s:%s@%d", r.Topic, r.Value, r.Offset)
			if string(r.Value[:3]) == "old" {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return r, nil
		}))
	}
	driver := kafkadriver.ShareDriver{Broker: b, Source: func(t *testing.T, group, _ string) sluice.Source {
		s, err := NewShareSource(ShareConfig{Brokers: b.Addrs(), Group: group, Topics: []string{"orders", "stays"},
			CloseTimeout: 5 * time.Second, Logger: kafkatest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}}
	src := driver.NewShareSource(t, group, "orders")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, build) }()

	deadline := time.After(recreateWait)
	// A share source polls again only once every record it polled has an
	// outcome, and a broker may serve the two topics in separate polls:
	// a record of stays may come before or after the held old records.
	// Each record is awaited once; one seen twice was redelivered.
	got := map[string]bool{}
	await := func(want map[string]bool) {
		t.Helper()
		for v := range want {
			if got[v] {
				delete(want, v)
			}
		}
		for len(want) > 0 {
			select {
			case v := <-seen:
				if got[v] {
					t.Errorf("record %s delivered twice", v)
				}
				got[v] = true
				delete(want, v)
			case err := <-done:
				t.Fatalf("Run returned %v while records %v were awaited", err, want)
			case <-deadline:
				t.Fatalf("records %v not delivered within %v", want, recreateWait)
			}
		}
	}
	await(map[string]bool{"orders:old-0@0": true, "orders:old-1@1": true})

	kafkadriver.RecreateTopic(t, b, "orders", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(context.Background(), recreateWait)
	defer pcancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("new-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The source polls again (and sees the topic gone) once every held
	// record has its outcome.
	close(release)
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-2")})
	await(map[string]bool{"orders:new-0@0": true, "stays:stay-0@0": true, "stays:stay-1@1": true, "stays:stay-2@2": true})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(recreateWait):
		t.Fatalf("Run did not return within %v of its context's end", recreateWait)
	}
	for _, topic := range []string{"orders", "stays"} {
		if lag := driver.AwaitUnacknowledged(t, group, topic, map[int32]int64{0: 0}); lag[0] != 0 || len(lag) != 1 {
			t.Errorf("share group %s's unacknowledged records of %s = %v, want {0: 0}", group, topic, lag)
		}
	}
}
