package franz

import (
	"context"
	"fmt"
	"sync"
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

// A share source consuming three topics: gone is deleted and never
// recreated (ShareConfig.Topics still names it), orders is deleted and
// recreated later, within gone's grace, and stays keeps flowing
// throughout. Nothing gets stuck: each topic deletion is handled at most
// once (the share group may stop assigning the deleted topic before the
// client reports it gone),
// the records of stays and of the new orders are delivered once each and
// acknowledged.
func TestShareSourceTopicsGoneAtDifferentTimesOthersFlow(t *testing.T) {
	const group = "g"
	b := kafkatest.NewBroker(t, kafkatest.WithKfakeOptions(kfake.BrokerConfigs(map[string]string{
		"group.share.heartbeat.interval.ms": "100",
	})))
	for _, topic := range []string{"gone", "orders", "stays"} {
		b.CreateTopic(t, topic, 1)
	}
	b.Produce(t, "gone", sluice.Record{Value: []byte("gone-0")})
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-0")})

	seen := make(chan string, 256)
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Map(in, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
			seen <- fmt.Sprintf("%s:%s@%d", r.Topic, r.Value, r.Offset)
			return r, nil
		}))
	}
	var (
		mu   sync.Mutex
		anew = map[string]int{}
	)
	anewCh := make(chan string, 16)
	logger := consumingAnewLogger(t, func(topic string, _ time.Time) {
		mu.Lock()
		anew[topic]++
		mu.Unlock()
		anewCh <- topic
	})
	driver := kafkadriver.ShareDriver{Broker: b, Source: func(t *testing.T, group, _ string) sluice.Source {
		s, err := NewShareSource(ShareConfig{Brokers: b.Addrs(), Group: group, Topics: []string{"gone", "orders", "stays"},
			CloseTimeout: 5 * time.Second, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}}
	src := driver.NewShareSource(t, group, "stays")
	cancel, done := startRun(t, src, build)

	deadline := time.After(recreateWait)
	got := map[string]int{}
	await := func(want ...string) {
		t.Helper()
		for _, v := range want {
			for got[v] == 0 {
				select {
				case s := <-seen:
					got[s]++
				case err := <-done:
					t.Fatalf("Run returned %v while record %s was awaited", err, v)
				case <-deadline:
					t.Fatalf("record %s not delivered within %v", v, recreateWait)
				}
			}
		}
	}
	awaitAnew := func(want string) {
		t.Helper()
		for {
			select {
			case topic := <-anewCh:
				if topic == want {
					return
				}
			case err := <-done:
				t.Fatalf("Run returned %v before consuming %s anew", err, want)
			case <-deadline:
				t.Fatalf("%s not consumed anew within %v", want, recreateWait)
			}
		}
	}
	await("gone:gone-0@0", "orders:old-0@0", "stays:stay-0@0")

	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), recreateWait)
	defer dcancel()
	if resp, err := adm.DeleteTopics(dctx, "gone"); err != nil || resp.Error() != nil {
		t.Fatalf("deleting gone: %v %v", err, resp.Error())
	}
	// The share group stops assigning gone's partition: the client
	// may not fetch it again (and report it gone) at all.
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-1")})
	await("stays:stay-1@1")

	// Soon after (within gone's grace, if the source consumed it anew),
	// orders is deleted and recreated.
	kafkadriver.RecreateTopic(t, b, "orders", 1)
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-2")})
	awaitAnew("orders")
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
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-3")})
	await("stays:stay-2@2", "orders:new-0@0", "stays:stay-3@3")

	// Past both graces, more records of both.
	after := time.After(defaultFetchMaxWait + shareFetchBound + 2*time.Second)
	select {
	case <-after:
	case err := <-done:
		t.Fatalf("Run returned %v", err)
	}
	if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("new-1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-4")})
	await("orders:new-1@1", "stays:stay-4@4")

	for _, topic := range []string{"orders", "stays"} {
		want := map[int32]int64{0: 0}
		if lag := driver.AwaitUnacknowledged(t, group, topic, want); lag[0] != 0 || len(lag) != 1 {
			t.Errorf("share group %s's unacknowledged records of %s = %v, want {0: 0}", group, topic, lag)
		}
	}
	stopRun(t, cancel, done)
	for len(seen) > 0 {
		got[<-seen]++
	}
	for v, n := range got {
		if n > 1 {
			t.Errorf("record %s delivered %d times, want once", v, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if anew["gone"] > 1 || anew["orders"] != 1 || anew["stays"] != 0 {
		t.Errorf("topics consumed anew %v, want orders once, gone at most once", anew)
	}
}
