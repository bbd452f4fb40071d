package franz

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
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
	b := shareTopicsBroker(t, kafkatest.NewKfake, []string{"orders", "stays"})
	c := b.Cluster()
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})

	var (
		mu       sync.Mutex
		anewAt   time.Time // when the source first consumed orders anew
		anewN    int
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

	r := startShareRun(t, b, ShareConfig{Group: group, Topics: []string{"orders", "stays"},
		CloseTimeout: 5 * time.Second, Logger: logger,
		// The client keeps a Metadata request in flight (each is
		// answered late below, within the 10s request timeout).
		Opts: []kgo.Opt{kgo.MetadataMinAge(100 * time.Millisecond), kgo.MetadataMaxAge(time.Second)}}, reportingGraph)
	r.await("orders:old-0@0")

	holdsOld := oldIDSessions(t, b, "orders")
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
		if !holdsOld(kr) || !deletion.seen() {
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

	r.awaitConsumedAnew(anew, "orders")
	<-purgeGate
	produceFresh(t, b, "orders", sluice.Record{Value: []byte("new-0")})

	r.await("orders:new-0@0")
	r.wantAcknowledged("orders")
	r.stop()
	r.deliveredOnce()
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
