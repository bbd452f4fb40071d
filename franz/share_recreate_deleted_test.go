package franz

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

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

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, src, build) }()
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
