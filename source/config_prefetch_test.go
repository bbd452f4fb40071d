package source

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/sluice-go/sluice"
)

// budgetGroup is a fakeGroup that tells its in-flight byte budget, as the
// Group of pipeline.Run does.
type budgetGroup struct {
	*fakeGroup
	budget int64
}

func (g budgetGroup) MaxInFlightBytes() int64 { return g.budget }

func TestPrefetchSizesFollowTheBudget(t *testing.T) {
	for _, tc := range []struct {
		budget              int64
		queueKiB, queueMsgs int
	}{
		{budget: 16 << 20, queueKiB: 1024, queueMsgs: 8192},
		{budget: 256 << 20, queueKiB: 1024, queueMsgs: 8192},
		{budget: 1 << 30, queueKiB: 4096, queueMsgs: 32768},
		// Tiny budgets keep fetching; huge ones stop at librdkafka's defaults.
		{budget: 1 << 10, queueKiB: 1024, queueMsgs: 8192},
		{budget: 64 << 30, queueKiB: 65536, queueMsgs: 100000},
	} {
		kib, msgs := prefetchSizes(tc.budget)
		if kib != tc.queueKiB || msgs != tc.queueMsgs {
			t.Errorf("prefetchSizes(%d) = %d KiB, %d messages; want %d KiB, %d messages",
				tc.budget, kib, msgs, tc.queueKiB, tc.queueMsgs)
		}
	}
}

func TestPrefetchKeepsOverrides(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides map[string]any
		want      map[string]any
	}{
		{"none", nil, map[string]any{"queued.max.messages.kbytes": 4096, "queued.min.messages": 32768}},
		{"queue overridden", map[string]any{"queued.max.messages.kbytes": 65536, "queued.min.messages": "5"},
			map[string]any{"queued.max.messages.kbytes": 65536, "queued.min.messages": "5"}},
		{"count overridden", map[string]any{"queued.min.messages": float64(500)},
			map[string]any{"queued.max.messages.kbytes": 4096, "queued.min.messages": 500}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Overrides = tc.overrides
			k, cm := configMapOf(t, cfg, 20*time.Second)
			k.cfg.prefetch(cm, 1<<30)
			for key, want := range tc.want {
				if got := cm[key]; got != want {
					t.Errorf("%s = %v (%T), want %v", key, got, got, want)
				}
			}
			// librdkafka accepts the result (it derives fetch.max.bytes
			// from the queue's size).
			cm["go.logs.channel.enable"] = false
			cm["log_level"] = 0
			c, err := kafka.NewConsumer(&cm)
			if err != nil {
				t.Fatalf("creating the client: %v", err)
			}
			c.Close()
		})
	}
}

// Run sizes librdkafka's prefetch from the budget of the Group it is given
// (Group.MaxInFlightBytes).
func TestRunSizesPrefetchFromBudget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		group    func() sluice.Group
		queueKiB string
	}{
		{"budget 2 GiB", func() sluice.Group { return budgetGroup{newFakeGroup(), 2 << 30} }, "8192"},
		{"the default budget, 256 MiB", func() sluice.Group { return newFakeGroup() }, "1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			cfg := baseConfig()
			cfg.Brokers = []string{"127.0.0.1:1"}
			cfg.CloseTimeout = 200 * time.Millisecond
			cfg.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			k, err := NewSource(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel() // Run creates the client, then shuts down at once
			_ = k.Run(ctx, tc.group())
			k.background.Wait()
			var line string
			for l := range strings.Lines(buf.String()) {
				if strings.Contains(l, "creating consumer") {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("no \"creating consumer\" log in:\n%s", buf.String())
			}
			if want := "queued.max.messages.kbytes=" + tc.queueKiB + " "; !strings.Contains(line, want) {
				t.Errorf("client configured with %s, want %s", line, want)
			}
		})
	}
}
