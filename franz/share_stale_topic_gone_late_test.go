package franz

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// consumedAnewHandler is a slog handler that calls fn, on the goroutine
// that logs, with the topic and time of each log of the share source
// saying it consumes a topic anew (its topicsGone acted on a report that
// the broker no longer knows the topic's ID; it logs that just before it
// purges the topic and adds it back), and passes every record on to next
// (when not nil).
type consumedAnewHandler struct {
	fn   func(topic string, at time.Time)
	next slog.Handler
}

func (h consumedAnewHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (h consumedAnewHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "the broker no longer knows the topic's ID: it was deleted") {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "topic" {
				h.fn(a.Value.String(), r.Time)
			}
			return true
		})
	}
	if h.next != nil && h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h consumedAnewHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if h.next != nil {
		h.next = h.next.WithAttrs(as)
	}
	return h
}

func (h consumedAnewHandler) WithGroup(g string) slog.Handler {
	if h.next != nil {
		h.next = h.next.WithGroup(g)
	}
	return h
}

// consumedAnewLogger returns a logger sending on ch the topics the share
// source consumes anew (consumedAnewHandler) and logging to
// kafkatest.Logger(t).
func consumedAnewLogger(t *testing.T, ch chan<- string) *slog.Logger {
	return consumingAnewLogger(t, sendTopic(ch))
}

// consumingAnewLogger returns a logger calling fn as consumedAnewHandler
// does and logging to kafkatest.Logger(t).
func consumingAnewLogger(t *testing.T, fn func(topic string, at time.Time)) *slog.Logger {
	var next slog.Handler
	if l := kafkatest.Logger(t); l != nil {
		next = l.Handler()
	}
	return slog.New(consumedAnewHandler{fn: fn, next: next})
}

// sendTopic returns a consumedAnewHandler function sending the topic on
// ch.
func sendTopic(ch chan<- string) func(string, time.Time) {
	return func(topic string, _ time.Time) { ch <- topic }
}

// A ShareFetch the client sent under a deleted topic's old ID, before the
// source consumed the topic anew, is answered after the first poll that
// followed (here, the broker answers it a second late; a broker may take
// up to the fetch max wait plus kgo's bound on a share fetch), while that
// poll returned a record of another topic, from another broker. The
// source polls again only once that record has its outcome, which takes
// longer than the grace: the next poll returns the old fetch's report,
// which kgo buffered within the grace. It is still stale: the topic was
// deleted once, and must be consumed anew once. Acting on it loses the
// graph of the recreated topic and releases the new topic's record it
// just delivered, which the broker then redelivers.
func TestShareSourceTopicGoneFromAFetchUnderTheOldIDPolledAfterTheGrace(t *testing.T) {
	const group = "g"
	b := shareTopicsBroker(t, kafkatest.NewKfake, []string{"orders", "stays"}, kafkatest.WithNodes(2))
	c := b.Cluster()
	// The old topic's partition on node 0, stays' on node 1.
	for topic, node := range map[string]int32{"orders": 0, "stays": 1} {
		if err := c.MoveTopicPartition(topic, 0, node); err != nil {
			t.Fatal(err)
		}
	}
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})

	release := make(chan struct{})  // ends old-0's processing
	stayHeld := make(chan struct{}) // stay-0 is in the graph
	stayDone := make(chan struct{}) // ends stay-0's processing
	graph := func(seen chan<- string) pipeline.Builder {
		return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 8, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
				seen <- topicValueOffset(r)
				var wait chan struct{}
				switch string(r.Value) {
				case "old-0":
					wait = release
				case "stay-0":
					close(stayHeld)
					wait = stayDone
				}
				if wait != nil {
					select {
					case <-wait:
					case <-ctx.Done():
					}
				}
				return r, nil
			}))
		}
	}
	anew := make(chan string, 16)
	// The grace: the fetch max wait, kgo's bound on a share fetch, and
	// a second to handle the answer.
	const grace = defaultFetchMaxWait + shareFetchBound + time.Second
	r := startShareRun(t, b, ShareConfig{Group: group, Topics: []string{"orders", "stays"},
		CloseTimeout: 5 * time.Second, Logger: consumedAnewLogger(t, anew)}, graph)
	r.await("orders:old-0@0")

	holdsOld := oldIDSessions(t, b, "orders")
	// The broker answers a second late every ShareFetch of a share
	// session holding the old ID's partition, from the fifth one after
	// the deletion on (kgo surfaces UNKNOWN_TOPIC_ID on the sixth
	// answer; the fetch it sends once the source polled that report is
	// the late one).
	var (
		mu       sync.Mutex
		oldAfter int
	)
	lateAnswered := make(chan struct{}, 64)
	ended := make(chan struct{}) // the test is over: no answer waits any longer
	t.Cleanup(func() { close(ended) })
	deletion := watchDeletion(c)
	c.ControlKey(kmsg.ShareFetch.Int16(), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		old := holdsOld(kr) && deletion.seen()
		mu.Lock()
		if old {
			oldAfter++
		}
		late := old && oldAfter >= 5
		mu.Unlock()
		if late {
			c.SleepControl(func() {
				select {
				case <-time.After(time.Second):
				case <-ended:
				}
			})
			select {
			case lateAnswered <- struct{}{}:
			default:
			}
		}
		return nil, nil, false
	})

	kafkadriver.RecreateTopic(t, b, "orders", 1)
	// The new topic's partition on node 0 first, where the client's
	// cursor of the old one stays; on node 1 once consumed anew.
	if err := c.MoveTopicPartition("orders", 0, 0); err != nil {
		t.Fatal(err)
	}
	close(release)

	// The source sees the topic gone and consumes it anew; the first
	// poll after that returns a record of stays, held past the grace.
	r.awaitConsumedAnew(anew, "orders")
	if err := c.MoveTopicPartition("orders", 0, 1); err != nil {
		t.Fatal(err)
	}
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-0")})
	select {
	case <-stayHeld:
	case <-r.deadline:
		t.Fatalf("stay-0 not delivered within %v", recreateWait)
	}
	held := time.After(grace + time.Second)
	produceFresh(t, b, "orders", sluice.Record{Value: []byte("new-0")})
	select {
	case <-lateAnswered:
	case <-r.deadline:
		t.Fatalf("no ShareFetch under the old ID answered late within %v", recreateWait)
	}
	<-held // stay-0's processing takes longer than the grace
	close(stayDone)

	r.await("stays:stay-0@0", "orders:new-0@0")
	r.wantAcknowledged("orders")
	r.stop()
	r.deliveredOnce()
	if n := len(anew); n > 0 {
		t.Errorf("orders, deleted and recreated once, consumed anew %d times more (its new graph lost, its records released)", n)
	}
}

// recordAwaiter returns a function that waits until each record it is
// given was seen (counted in got), failing t when Run returns or when
// deadline (within after the test started) passes.
func recordAwaiter(t *testing.T, seen <-chan string, done <-chan error, deadline <-chan time.Time, within time.Duration, got map[string]int) func(want ...string) {
	return func(want ...string) {
		t.Helper()
		for _, v := range want {
			for got[v] == 0 {
				select {
				case s := <-seen:
					got[s]++
				case err := <-done:
					t.Fatalf("Run returned %v while record %s was awaited", err, v)
				case <-deadline:
					t.Fatalf("record %s not delivered within %v", v, within)
				}
			}
		}
	}
}
