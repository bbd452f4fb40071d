package franz

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A share source is told to stop while it consumes a deleted (and
// recreated) topic anew, its purge from the client
// (kgo.Client.PurgeTopicsFromClient) waiting on kgo's metadata loop for a
// Metadata request the broker answers late (well within the client's
// request timeout). Nothing is held and nothing is left to drain: Run
// must return within ShareConfig.CloseTimeout of its context's end (plus
// a margin for the runtime's drain). A purge the source waits for, on
// its poll goroutine, without watching its context, keeps Run from
// stopping for as long as the broker takes to answer the Metadata
// request, although the client is about to be closed and the purge is
// of no use any more. Run may say that closing the client goes on in the
// background: kgo's Close waits for that request.
func TestShareSourceStopsWithinCloseTimeoutWhileAPurgeWaitsForMetadata(t *testing.T) {
	const (
		group        = "g"
		closeTimeout = time.Second
	)
	b := shareTopicsBroker(t, kafkatest.NewKfake, []string{"orders", "stays"})
	c := b.Cluster()
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})

	anew := make(chan string, 16)
	logger := consumingAnewLogger(t, func(topic string, _ time.Time) { anew <- topic })
	r := startShareRun(t, b, ShareConfig{Group: group, Topics: []string{"orders", "stays"},
		CloseTimeout: closeTimeout, Logger: logger,
		// The client keeps a Metadata request in flight; each may
		// take up to 30s before kgo gives it up.
		Opts: []kgo.Opt{kgo.MetadataMinAge(100 * time.Millisecond), kgo.MetadataMaxAge(time.Second),
			kgo.RequestTimeoutOverhead(30 * time.Second)}}, reportingGraph)
	r.await("orders:old-0@0")

	release := make(chan struct{}) // the broker answers the held Metadata requests
	ended := make(chan struct{})   // the test is over: no answer waits any longer
	t.Cleanup(func() { close(ended) })
	// From the deletion on, the share client's Metadata requests (only
	// it names stays) are answered once release is closed.
	holdMetadataAfterDeletion(c, watchDeletion(c), func() {
		select {
		case <-release:
		case <-ended:
		}
	}, "stays")

	kafkadriver.RecreateTopic(t, b, "orders", 1)

	// The source logs that it consumes orders anew just before it purges
	// the topic from the client.
	r.awaitConsumedAnew(anew, "orders")
	stopWhilePurgeWaits(t, purgeWaitStop{cancel: r.cancel, done: r.done, release: release, background: &r.src.background,
		closeTimeout: closeTimeout, setting: "ShareConfig.CloseTimeout",
		inBackground: "closing the share client did not finish within ShareConfig.CloseTimeout"})
}
