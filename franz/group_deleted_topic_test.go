package franz

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A group source consuming two topics, one of which is deleted: Run goes
// on consuming the other (its commits exact) and, once the topic is
// created again, reports it gone (without a fetch error logged per fetch)
// and consumes it from its start.
func TestSourceTopicDeletedOtherTopic(t *testing.T) {
	b := kafkatest.NewBroker(t)
	gone := make(chan string, 16)
	var fetchErrors atomic.Int64
	src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders", "stays"},
		CommitInterval: 100 * time.Millisecond, CloseTimeout: 10 * time.Second,
		Logger: slog.New(countingHandler{goneHandler{gone}, "fetch error", &fetchErrors, kafkatest.Logger(t)})}})
	if err != nil {
		t.Fatal(err)
	}
	kafkadriver.TopicDeletedOtherTopic(t, b, src)
	select {
	case got := <-gone:
		if got != "orders" {
			t.Fatalf("the source reported topic %q gone, want orders", got)
		}
	default:
		t.Fatal("the source did not report orders gone")
	}
	// kgo reports UNKNOWN_TOPIC_ID only once it persisted; the source
	// then stops fetching the old topic at once.
	if n := fetchErrors.Load(); n > 20 {
		t.Errorf("%d fetch errors logged, want the deleted topic handled without a warning per fetch", n)
	}
}

// countingHandler counts the logs whose message is msg and passes every
// log on to next, and to also.
type countingHandler struct {
	next slog.Handler
	msg  string
	n    *atomic.Int64
	also *slog.Logger // kafkatest.Logger, or nil
}

func (h countingHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	if h.also != nil {
		_ = h.also.Handler().Handle(ctx, r)
	}
	return h.next.Handle(ctx, r)
}

func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countingHandler) WithGroup(string) slog.Handler      { return h }
