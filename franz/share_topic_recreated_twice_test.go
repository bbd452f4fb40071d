package franz

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// ignoredReportsHandler counts the share source's logs saying it ignored
// a report that the broker no longer knows a topic's ID, and passes every
// record on to consumedAnewHandler.
type ignoredReportsHandler struct {
	n *atomic.Int64
	consumedAnewHandler
}

func (h ignoredReportsHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "ignored a report that the broker no longer knows the topic's ID") {
		h.n.Add(1)
	}
	return h.consumedAnewHandler.Handle(ctx, r)
}

func (h ignoredReportsHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.consumedAnewHandler = h.consumedAnewHandler.WithAttrs(as).(consumedAnewHandler)
	return h
}

func (h ignoredReportsHandler) WithGroup(g string) slog.Handler {
	h.consumedAnewHandler = h.consumedAnewHandler.WithGroup(g).(consumedAnewHandler)
	return h
}

// A topic deleted and recreated twice in a row, the second time while the
// source ignores reports of the topic gone (a fetch under the first ID may
// still answer): the second deletion goes on being reported and is
// handled once the grace ends. The source consumes the topic anew once
// per deletion, and the records of the third topic are delivered once
// each and acknowledged. Meanwhile it polls at most once per poll idle:
// kgo buffers every answer carrying the error at once, without a
// backoff, so polling again at once would fetch at round-trip pace for
// the whole grace.
func TestShareSourceTopicRecreatedTwiceWithinTheGrace(t *testing.T) {
	ignored, within := recreateTwice(t)
	if limit := int64(within/pollIdle) + 10; ignored > limit {
		t.Errorf("%d reports of the topic gone ignored within %v (a ShareFetch and a poll each), want at most %d (one per %v)",
			ignored, within, limit, pollIdle)
	}
}

// recreateTwice runs TestShareSourceTopicRecreatedTwiceWithinTheGrace's
// scenario and returns how many reports of the topic gone the source
// ignored, and the time between the two times it consumed the topic anew.
func recreateTwice(t *testing.T) (ignored int64, within time.Duration) {
	t.Helper()
	const topic, group = "orders", "g"
	b := recreateBroker(t, topic)
	b.Produce(t, topic, sluice.Record{Value: []byte("first-0")})

	seen := make(chan string, 64)
	release := make(chan struct{})
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Pool(in, 8, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
			seen <- fmt.Sprintf("%s@%d", r.Value, r.Offset)
			if string(r.Value) == "first-0" {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return r, nil
		}))
	}
	anew := make(chan string, 16)
	var nIgnored atomic.Int64
	var next slog.Handler
	if l := kafkatest.Logger(t); l != nil {
		next = l.Handler()
	}
	logger := slog.New(ignoredReportsHandler{n: &nIgnored, consumedAnewHandler: consumedAnewHandler{fn: sendTopic(anew), next: next}})
	driver := recreateDriver(b, func(testing.TB) *slog.Logger { return logger })
	src := driver.NewShareSource(t, group, topic)
	cancel, done := startRun(t, src, build)

	deadline := time.After(2 * recreateWait)
	got := map[string]int{}
	await := recordAwaiter(t, seen, done, deadline, 2*recreateWait, got)
	awaitAnew := func() time.Time {
		t.Helper()
		select {
		case got := <-anew:
			if got != topic {
				t.Fatalf("consumed %s anew, want %s", got, topic)
			}
		case err := <-done:
			t.Fatalf("Run returned %v before consuming %s anew", err, topic)
		case <-deadline:
			t.Fatalf("%s not consumed anew within %v", topic, 2*recreateWait)
		}
		return time.Now()
	}
	produce := func(v string) {
		t.Helper()
		produceFresh(t, b, topic, sluice.Record{Value: []byte(v)})
	}
	await("first-0@0")

	kafkadriver.RecreateTopic(t, b, topic, 1)
	produce("second-0")
	close(release)
	first := awaitAnew()
	await("second-0@0")

	// Within the grace of the first, the topic is deleted and recreated
	// again.
	kafkadriver.RecreateTopic(t, b, topic, 1)
	produce("third-0")
	produce("third-1")
	second := awaitAnew()
	ignored, within = nIgnored.Load(), second.Sub(first)
	t.Logf("consumed anew the second time %v after the first; %d reports ignored meanwhile", within, ignored)
	await("third-0@0", "third-1@1")

	stopRun(t, cancel, done)
	for len(seen) > 0 {
		got[<-seen]++
	}
	for v, n := range got {
		if n > 1 {
			t.Errorf("record %s delivered %d times, want once", v, n)
		}
	}
	if n := len(anew); n > 0 {
		t.Errorf("%s, deleted twice, consumed anew %d times more", topic, n)
	}
	if lag := driver.AwaitUnacknowledged(t, group, topic, map[int32]int64{0: 0}); lag[0] != 0 || len(lag) != 1 {
		t.Errorf("share group %s's unacknowledged records of %s = %v, want {0: 0}", group, topic, lag)
	}
	return ignored, within
}
