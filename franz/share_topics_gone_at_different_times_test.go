package franz

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
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
	b := shareTopicsBroker(t, kafkatest.NewBroker, []string{"gone", "orders", "stays"})
	b.Produce(t, "gone", sluice.Record{Value: []byte("gone-0")})
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-0")})

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
	r := startShareRun(t, b, ShareConfig{Group: group, Topics: []string{"gone", "orders", "stays"},
		CloseTimeout: 5 * time.Second, Logger: logger}, reportingGraph)

	awaitAnew := func(want string) {
		t.Helper()
		for {
			select {
			case topic := <-anewCh:
				if topic == want {
					return
				}
			case err := <-r.done:
				t.Fatalf("Run returned %v before consuming %s anew", err, want)
			case <-r.deadline:
				t.Fatalf("%s not consumed anew within %v", want, recreateWait)
			}
		}
	}
	r.await("gone:gone-0@0", "orders:old-0@0", "stays:stay-0@0")

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
	r.await("stays:stay-1@1")

	// Soon after (within gone's grace, if the source consumed it anew),
	// orders is deleted and recreated.
	kafkadriver.RecreateTopic(t, b, "orders", 1)
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-2")})
	awaitAnew("orders")
	produceFresh(t, b, "orders", sluice.Record{Value: []byte("new-0")})
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-3")})
	r.await("stays:stay-2@2", "orders:new-0@0", "stays:stay-3@3")

	// Past both graces, more records of both.
	after := time.After(defaultFetchMaxWait + shareFetchBound + 2*time.Second)
	select {
	case <-after:
	case err := <-r.done:
		t.Fatalf("Run returned %v", err)
	}
	produceFresh(t, b, "orders", sluice.Record{Value: []byte("new-1")})
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-4")})
	r.await("orders:new-1@1", "stays:stay-4@4")

	for _, topic := range []string{"orders", "stays"} {
		r.wantAcknowledged(topic)
	}
	r.stop()
	r.deliveredOnce()
	mu.Lock()
	defer mu.Unlock()
	if anew["gone"] > 1 || anew["orders"] != 1 || anew["stays"] != 0 {
		t.Errorf("topics consumed anew %v, want orders once, gone at most once", anew)
	}
}
