package franz

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The grace of a topic consumed anew is counted from before the source
// purges it from the client, but the purge (kgo.Client.PurgeTopicsFromClient)
// runs on kgo's metadata loop and waits for the Metadata request in flight
// (bounded only by the request timeout, 10s by default, and retried).
// Until the purge has run, the client's cursor of the old topic ID is
// live: a ShareFetch sent meanwhile under the old ID (here, after
// fetches whose connection dropped, each followed by kgo's backoff) has
// kgo's whole bound on a share fetch (its max wait plus 5s) from when it
// was sent, so its answer can come after the grace and after the first
// poll that starts after it. The source then takes that report, from the
// deletion it already handled, for a new deletion and consumes the
// recreated topic anew a second time (its new graphs lost, its records
// released, its record redelivered once its acknowledgement is refused).
//
// Here the broker answers the share client's Metadata requests late from
// the deletion until 3.5s after the source started consuming the topic
// anew, drops the connection of the first ShareFetches under the old ID
// sent within 1.8s after that, and answers the next one 4.9s late (within
// kgo's bound of 5.1s).
func TestShareSourceTopicGoneFromAFetchSentWhileThePurgeWaitedForMetadata(t *testing.T) {
	const group = "g"
	b := kafkatest.NewKfake(t, kafkatest.WithKfakeOptions(kfake.BrokerConfigs(map[string]string{
		"group.share.heartbeat.interval.ms": "100",
	})))
	c := b.Cluster()
	b.CreateTopic(t, "orders", 1)
	b.CreateTopic(t, "stays", 1)
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})

	seen := make(chan string, 64)
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Map(in, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
			seen <- fmt.Sprintf("%s:%s@%d", r.Topic, r.Value, r.Offset)
			return r, nil
		}))
	}

	var (
		mu       sync.Mutex
		anewAt   time.Time // when the source first consumed orders anew
		anewN    int
		session  = map[int32]bool{} // by node: its share session holds the old partition
		lateSent bool
	)
	purgeGate := make(chan struct{}) // closed 3.5s after the source consumed orders anew
	ended := make(chan struct{})     // the test is over: no answer waits any longer
	t.Cleanup(func() { close(ended) })
	anew := make(chan string, 16)
	logger := consumingAnewLogger(t, func(topic string, at time.Time) {
		mu.Lock()
		anewN++
		if anewN == 1 {
			anewAt = at
			time.AfterFunc(3500*time.Millisecond, func() { close(purgeGate) })
		}
		mu.Unlock()
		anew <- topic
	})

	driver := kafkadriver.ShareDriver{Broker: b, Source: func(t *testing.T, group, _ string) sluice.Source {
		s, err := NewShareSource(ShareConfig{Brokers: b.Addrs(), Group: group, Topics: []string{"orders", "stays"},
			CloseTimeout: 5 * time.Second, Logger: logger,
			// The client keeps a Metadata request in flight (each is
			// answered late below, within the 10s request timeout).
			Opts: []kgo.Opt{kgo.MetadataMinAge(100 * time.Millisecond), kgo.MetadataMaxAge(time.Second)}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}}
	src := driver.NewShareSource(t, group, "orders")
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
	await("orders:old-0@0")

	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	details, err := adm.ListTopics(t.Context(), "orders")
	if err != nil || details["orders"].Err != nil {
		t.Fatalf("orders' topic ID: %v %v", err, details["orders"].Err)
	}
	oldID := [16]byte(details["orders"].ID)

	deletion := watchDeletion(c)
	// The share client's Metadata requests (only it names stays) wait
	// for the purge gate, up to 9s each.
	holdMetadataAfterDeletion(c, deletion, func() {
		select {
		case <-purgeGate:
		case <-time.After(9 * time.Second):
		case <-ended:
		}
	}, "stays")
	c.ControlKey(kmsg.ShareFetch.Int16(), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.ShareFetchRequest)
		node := c.CurrentNode()
		mu.Lock()
		if req.ShareSessionEpoch <= 0 {
			session[node] = false
		}
		for _, rt := range req.Topics {
			if rt.TopicID == oldID {
				session[node] = true
			}
		}
		for _, ft := range req.ForgottenTopicsData {
			if ft.TopicID == oldID {
				session[node] = false
			}
		}
		old := session[node] && deletion.seen()
		mu.Unlock()
		if !old {
			return nil, nil, false
		}
		arrived := time.Now()
		// Let the source log that it consumes the topic anew, if the
		// report this fetch follows is the one it acts on.
		c.SleepControl(func() {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-ended:
			}
		})
		mu.Lock()
		since := time.Since(anewAt)
		known := !anewAt.IsZero()
		late := known && since >= 1800*time.Millisecond && !lateSent
		if late {
			lateSent = true
		}
		mu.Unlock()
		switch {
		case known && since < 1800*time.Millisecond:
			return nil, errors.New("connection dropped"), true
		case late:
			c.SleepControl(func() {
				select {
				case <-time.After(time.Until(arrived.Add(4900 * time.Millisecond))):
				case <-ended:
				}
			})
		}
		return nil, nil, false
	})

	kafkadriver.RecreateTopic(t, b, "orders", 1)

	select {
	case topic := <-anew:
		if topic != "orders" {
			t.Fatalf("consumed %s anew, want orders", topic)
		}
	case err := <-done:
		t.Fatalf("Run returned %v before consuming orders anew", err)
	case <-deadline:
		t.Fatalf("orders not consumed anew within %v", recreateWait)
	}
	<-purgeGate
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

	await("orders:new-0@0")
	if lag := driver.AwaitUnacknowledged(t, group, "orders", map[int32]int64{0: 0}); lag[0] != 0 || len(lag) != 1 {
		t.Errorf("share group %s's unacknowledged records of orders = %v, want {0: 0}", group, lag)
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
	if !lateSent {
		// The source polls nothing while the purge waits, so kgo
		// may send no more fetches under the old ID: the outcome is
		// what counts.
		t.Log("no ShareFetch under the old ID sent 1.8s after the source consumed orders anew, while the purge waited")
	}
	if n := len(anew); n > 0 {
		t.Errorf("orders, deleted and recreated once, consumed anew %d times more (its new graph lost, its records released)", n)
	}
}
