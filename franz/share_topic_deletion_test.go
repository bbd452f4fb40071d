package franz

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A topic deleted and recreated under the same name while a share source
// consumes it: the outcomes of the records of the old topic cannot be
// acknowledged (the broker knows their topic ID no more), which must not
// fail or stall Run, and every record of the new topic is delivered.
func TestShareSourceTopicRecreated(t *testing.T) {
	const topic, group = "orders", "g"
	b := recreateBroker(t, topic)
	old := []sluice.Record{{Value: []byte("old-0")}, {Value: []byte("old-1")}, {Value: []byte("old-2")}}
	b.Produce(t, topic, old...)

	seen := make(chan string, 64)
	release := make(chan struct{})
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Pool(in, 8, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
			seen <- fmt.Sprintf("%s@%d", r.Value, r.Offset)
			if strings.HasPrefix(string(r.Value), "old-") {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return r, nil
		}))
	}
	driver := recreateDriver(b, kafkatest.Logger)
	src := driver.NewShareSource(t, group, topic)

	cancel, done := startRun(t, src, build)

	deadline := time.After(recreateWait)
	await := func(want map[string]bool) {
		t.Helper()
		for len(want) > 0 {
			select {
			case v := <-seen:
				delete(want, v)
			case err := <-done:
				t.Fatalf("Run returned %v while records %v were awaited", err, want)
			case <-deadline:
				t.Fatalf("records %v not delivered within %v", want, recreateWait)
			}
		}
	}
	await(map[string]bool{"old-0@0": true, "old-1@1": true, "old-2@2": true})

	// The old records are held by the graph: delete and recreate the
	// topic, then let them finish. A fresh client produces to the new
	// topic (a kgo client that saw the old topic ID refuses the new one).
	kafkadriver.RecreateTopic(t, b, topic, 1)
	produceFresh(t, b, topic, sluice.Record{Value: []byte("new-0")}, sluice.Record{Value: []byte("new-1")}, sluice.Record{Value: []byte("new-2")})
	close(release)

	await(map[string]bool{"new-0@0": true, "new-1@1": true, "new-2@2": true})
	stopRun(t, cancel, done)
	// Run flushed the acknowledgements of the new topic's records.
	if lag := driver.AwaitUnacknowledged(t, group, topic, map[int32]int64{0: 0}); lag[0] != 0 || len(lag) != 1 {
		t.Fatalf("share group %s's unacknowledged records of %s = %v, want {0: 0}", group, topic, lag)
	}
}

// recreateBroker returns a broker holding topic with one partition, whose
// share groups heartbeat every 100ms on kfake.
func recreateBroker(t *testing.T, topic string) *kafkatest.Broker {
	t.Helper()
	return shareTopicsBroker(t, kafkatest.NewBroker, []string{topic})
}

// recreateDriver makes the share sources of the topic deletion tests,
// each logging to logger(t).
func recreateDriver(b *kafkatest.Broker, logger func(testing.TB) *slog.Logger) kafkadriver.ShareDriver {
	return kafkadriver.ShareDriver{Broker: b, Source: func(t *testing.T, group, topic string) sluice.Source {
		s, err := NewShareSource(ShareConfig{Brokers: b.Addrs(), Group: group, Topics: []string{topic},
			CloseTimeout: 5 * time.Second, Logger: logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}}
}

// stopRun cancels Run's context and wants Run to return nil within
// recreateWait.
func stopRun(t *testing.T, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(recreateWait):
		t.Fatalf("Run did not return within %v of its context's end", recreateWait)
	}
}

// recreateWait bounds each wait of the topic deletion tests.
const recreateWait = 60 * time.Second

// A topic deleted (and not recreated) while a share source consumes it,
// with records of it in the graph: their acknowledgements fail (the
// broker no longer knows the topic), which Run logs as a warning naming
// the topic; Run goes on, and stops with nil.
func TestShareSourceTopicDeleted(t *testing.T) {
	const topic, group = "orders", "g"
	b := recreateBroker(t, topic)
	b.Produce(t, topic, sluice.Record{Value: []byte("a")}, sluice.Record{Value: []byte("b")})

	seen := make(chan struct{}, 2)
	release := make(chan struct{})
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Pool(in, 2, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
			seen <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return r, nil
		}))
	}
	gone := make(chan string, 16)
	logger := slog.New(goneHandler{gone})
	src := recreateDriver(b, func(testing.TB) *slog.Logger { return logger }).NewShareSource(t, group, topic)

	cancel, done := startRun(t, src, build)
	deadline := time.After(recreateWait)
	for range 2 {
		select {
		case <-seen:
		case err := <-done:
			t.Fatalf("Run returned %v before delivering the records", err)
		case <-deadline:
			t.Fatalf("records not delivered within %v", recreateWait)
		}
	}

	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), recreateWait)
	defer dcancel()
	if resp, err := adm.DeleteTopics(dctx, topic); err != nil || resp.Error() != nil {
		t.Fatalf("deleting %s: %v %v", topic, err, resp.Error())
	}
	close(release)
	select {
	case got := <-gone:
		if got != topic {
			t.Fatalf("the source reported topic %q gone, want %q", got, topic)
		}
	case err := <-done:
		t.Fatalf("Run returned %v after the topic's deletion, want it to go on", err)
	case <-deadline:
		t.Fatalf("the source logged no failed acknowledgement of %s within %v", topic, recreateWait)
	}
	stopRun(t, cancel, done)
}

// goneHandler is a slog handler sending to its channel the topic of each
// log of the share source saying that the broker no longer knows a topic
// (a failed acknowledgement, or the topic consumed anew).
type goneHandler struct{ ch chan<- string }

func (h goneHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h goneHandler) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "the broker no longer knows the topic") {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "topic" {
			select {
			case h.ch <- a.Value.String():
			default:
			}
		}
		return true
	})
	return nil
}

func (h goneHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h goneHandler) WithGroup(string) slog.Handler      { return h }

// A share source consuming two topics, one of which is deleted and
// recreated while the graph holds records of it: the records of the
// other topic keep their graph and their acknowledgements (none is
// redelivered, each is acknowledged), and the records of the new topic
// and of the other one are delivered once each.
func TestShareSourceTopicRecreatedOtherTopic(t *testing.T) {
	const group = "g"
	b := shareTopicsBroker(t, kafkatest.NewBroker, []string{"orders", "stays"})
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")}, sluice.Record{Value: []byte("old-1")})
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-0")}, sluice.Record{Value: []byte("stay-1")})

	release := make(chan struct{})
	graph := func(seen chan<- string) pipeline.Builder {
		return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(stages.Pool(in, 8, func(ctx context.Context, r sluice.Record) (sluice.Record, error) {
				seen <- topicValueOffset(r)
				if string(r.Value[:3]) == "old" {
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return r, nil
			}))
		}
	}
	r := startShareRun(t, b, ShareConfig{Group: group, Topics: []string{"orders", "stays"},
		CloseTimeout: 5 * time.Second, Logger: kafkatest.Logger(t)}, graph)

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
			case v := <-r.seen:
				if got[v] {
					t.Errorf("record %s delivered twice", v)
				}
				got[v] = true
				delete(want, v)
			case err := <-r.done:
				t.Fatalf("Run returned %v while records %v were awaited", err, want)
			case <-r.deadline:
				t.Fatalf("records %v not delivered within %v", want, recreateWait)
			}
		}
	}
	await(map[string]bool{"orders:old-0@0": true, "orders:old-1@1": true})

	kafkadriver.RecreateTopic(t, b, "orders", 1)
	produceFresh(t, b, "orders", sluice.Record{Value: []byte("new-0")})
	// The source polls again (and sees the topic gone) once every held
	// record has its outcome.
	close(release)
	b.Produce(t, "stays", sluice.Record{Value: []byte("stay-2")})
	await(map[string]bool{"orders:new-0@0": true, "stays:stay-0@0": true, "stays:stay-1@1": true, "stays:stay-2@2": true})

	r.stop()
	for _, topic := range []string{"orders", "stays"} {
		r.wantAcknowledged(topic)
	}
}
