package franz_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// levelCount counts franz-go's log records by level.
type levelCount struct {
	mu     sync.Mutex
	min    slog.Level
	counts map[slog.Level]int
}

func (c *levelCount) Enabled(_ context.Context, l slog.Level) bool { return l >= c.min }
func (c *levelCount) WithAttrs([]slog.Attr) slog.Handler           { return c }
func (c *levelCount) WithGroup(string) slog.Handler                { return c }
func (c *levelCount) Handle(_ context.Context, r slog.Record) error {
	fromKgo := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "source" && a.Value.String() == "franz-go" {
			fromKgo = true
		}
		return true
	})
	if fromKgo {
		c.mu.Lock()
		c.counts[r.Level]++
		c.mu.Unlock()
	}
	return nil
}

func (c *levelCount) get(l slog.Level) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[l]
}

// kgo's info lines (a couple of dozen at start: connections, metadata,
// the group join) are logged at debug level: an Info logger sees none;
// a Debug logger sees them.
func TestKgoInfoLinesAreDebug(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "in", 2)
	b.Produce(t, "in", input(2, 0, 5)...)
	for _, tc := range []struct {
		level     slog.Level
		wantDebug bool
	}{{slog.LevelInfo, false}, {slog.LevelDebug, true}} {
		logs := &levelCount{min: tc.level, counts: map[slog.Level]int{}}
		src, err := franz.NewSource(franz.Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "g-" + tc.level.String(), Topics: []string{"in"},
			CommitInterval: 50 * time.Millisecond, Logger: slog.New(logs)},
			Opts: []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond)}})
		if err != nil {
			t.Fatal(err)
		}
		r := testkit.Start(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Discard(in)
		})
		waitCommitted(t, b, r, "g-"+tc.level.String(), "in", map[int32]int64{0: 5, 1: 5})
		stop(t, r)
		if n := logs.get(slog.LevelInfo); n != 0 {
			t.Errorf("logger at %v: %d kgo lines at info level, want none", tc.level, n)
		}
		if got := logs.get(slog.LevelDebug) > 0; got != tc.wantDebug {
			t.Errorf("logger at %v: kgo debug lines %d, want some: %v", tc.level, logs.get(slog.LevelDebug), tc.wantDebug)
		}
	}
}
