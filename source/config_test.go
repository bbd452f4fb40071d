package source

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/sluice-go/sluice"
)

func baseConfig() Config {
	return Config{GroupConfig: sluice.GroupConfig{Brokers: []string{"127.0.0.1:1"}, Group: "g", Topics: []string{"t"}}}
}

// configMapOf returns a source of cfg and the librdkafka configuration it
// makes for the drain timeout drain, failing t if NewSource or configMap
// fails.
func configMapOf(t *testing.T, cfg Config, drain time.Duration) (*Source, kafka.ConfigMap) {
	t.Helper()
	k, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := k.cfg.configMap(drain)
	if err != nil {
		t.Fatal(err)
	}
	return k, cm
}

// Numbers of every Go type are converted to what kafka.ConfigMap accepts;
// confluent-kafka-go rejects anything but string, bool and int when the
// client is created ("Invalid value type float64 for key ...").
func TestOverrideNumbersConverted(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want any
	}{
		{int8(-8), -8}, {int16(16), 16}, {int32(32), 32}, {int64(64), 64},
		{uint(1), 1}, {uint8(8), 8}, {uint16(16), 16}, {uint32(32), 32}, {uint64(64), 64},
		{float32(6000), 6000}, {float64(6000), 6000}, {float64(-1), -1},
		{"6000", "6000"}, {true, true}, {7, 7},
	} {
		cfg := baseConfig()
		cfg.Overrides = map[string]any{"fetch.wait.max.ms": tc.in}
		k, err := NewSource(cfg)
		if err != nil {
			t.Errorf("%T(%v): NewSource = %v", tc.in, tc.in, err)
			continue
		}
		if got := k.cfg.Overrides["fetch.wait.max.ms"]; got != tc.want {
			t.Errorf("%T(%v) became %T(%v), want %T(%v)", tc.in, tc.in, got, got, tc.want, tc.want)
		}
	}
	// librdkafka's float properties keep their fraction, as text.
	cfg := baseConfig()
	cfg.Overrides = map[string]any{"linger.ms": 0.5, "queue.buffering.max.ms": float32(2.25)}
	k, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.cfg.Overrides["linger.ms"]; got != "0.5" {
		t.Errorf("linger.ms 0.5 became %T(%v), want the string 0.5", got, got)
	}
	if got := k.cfg.Overrides["queue.buffering.max.ms"]; got != "2.25" {
		t.Errorf("queue.buffering.max.ms 2.25 became %T(%v), want the string 2.25", got, got)
	}
}

func TestOverrideBadNumbersRejected(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{1.5, "wants an integer"},
		{math.NaN(), "not a finite number"},
		{math.Inf(1), "not a finite number"},
		{float64(1 << 63), "out of range"},
		{uint64(math.MaxUint64), "out of range"},
		{[]int{1}, "unsupported value type []int"},
		{time.Second, "unsupported value type time.Duration"},
	} {
		cfg := baseConfig()
		cfg.Overrides = map[string]any{"session.timeout.ms": tc.in}
		_, err := NewSource(cfg)
		if err == nil || !strings.Contains(err.Error(), `Config.Overrides["session.timeout.ms"]`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%T(%v): NewSource = %v, want an error naming the key and %q", tc.in, tc.in, err, tc.want)
		}
	}
}

// The converted values are accepted by librdkafka itself (the review bug:
// NewSource accepted float64, Run failed creating the client).
func TestOverrideNumbersAcceptedByClient(t *testing.T) {
	cfg := baseConfig()
	cfg.Overrides = map[string]any{
		"session.timeout.ms":         float64(6000), // as decoded from JSON
		"heartbeat.interval.ms":      int64(500),
		"queued.max.messages.kbytes": int32(1024),
		"fetch.wait.max.ms":          uint16(50),
		"linger.ms":                  0.5, // a producer property: ignored, with a warning
	}
	_, cm := configMapOf(t, cfg, 20*time.Second)
	cm["go.logs.channel.enable"] = false
	cm["log_level"] = 0
	c, err := kafka.NewConsumer(&cm)
	if err != nil {
		t.Fatalf("creating the client: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestGroupTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
		close time.Duration
		ov    map[string]any
		want  map[string]any // nil value: must be absent
	}{
		{"defaults", 20 * time.Second, 0, nil, map[string]any{
			"max.poll.interval.ms": 30000, "session.timeout.ms": 10000, "heartbeat.interval.ms": 3000}},
		{"short drain: at least the session timeout", 2 * time.Second, time.Second, nil, map[string]any{
			"max.poll.interval.ms": 10000, "session.timeout.ms": 10000, "heartbeat.interval.ms": 3000}},
		{"long drain", time.Minute, 20 * time.Second, nil, map[string]any{
			"max.poll.interval.ms": 74000, "session.timeout.ms": 10000}}, // 60s + 8s + 6s
		{"session override", 20 * time.Second, 0, map[string]any{"session.timeout.ms": 40000}, map[string]any{
			"max.poll.interval.ms": 40000, "session.timeout.ms": 40000, "heartbeat.interval.ms": 3000}},
		{"short session: heartbeat a third", 20 * time.Second, 0, map[string]any{"session.timeout.ms": "3000"}, map[string]any{
			"max.poll.interval.ms": 30000, "session.timeout.ms": "3000", "heartbeat.interval.ms": 1000}},
		{"heartbeat override", 20 * time.Second, 0, map[string]any{"heartbeat.interval.ms": 100}, map[string]any{
			"session.timeout.ms": 10000, "heartbeat.interval.ms": 100}},
		{"kip848: no classic properties", 20 * time.Second, 0, map[string]any{"group.protocol": "consumer"}, map[string]any{
			"max.poll.interval.ms": 30000, "session.timeout.ms": nil, "heartbeat.interval.ms": nil, "partition.assignment.strategy": nil}},
		{"max.poll override kept", 20 * time.Second, 0, map[string]any{"max.poll.interval.ms": "60000"}, map[string]any{
			"max.poll.interval.ms": "60000", "session.timeout.ms": nil}},
		{"max.poll override at the minimum", 20 * time.Second, 0, map[string]any{"max.poll.interval.ms": 24000}, map[string]any{
			"max.poll.interval.ms": 24000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.CloseTimeout = tc.close
			cfg.Overrides = tc.ov
			_, cm := configMapOf(t, cfg, tc.drain)
			for key, want := range tc.want {
				got, ok := cm[key]
				if want == nil {
					if ok {
						t.Errorf("%s = %v, want it unset", key, got)
					}
					continue
				}
				if got != want {
					t.Errorf("%s = %T(%v), want %T(%v)", key, got, got, want, want)
				}
			}
		})
	}
}

func TestGroupTimeoutsContradictingDrain(t *testing.T) {
	for _, tc := range []struct {
		drain time.Duration
		ov    map[string]any
		want  []string
	}{
		{20 * time.Second, map[string]any{"max.poll.interval.ms": 3000},
			[]string{`Config.Overrides["max.poll.interval.ms"] = 3000`, "drain timeout 20s", "commit timeout 4s (40% of Config.CloseTimeout 10s)", "24000 ms"}},
		{20 * time.Second, map[string]any{"max.poll.interval.ms": "23999"},
			[]string{`Config.Overrides["max.poll.interval.ms"] = 23999`}},
		{20 * time.Second, map[string]any{"max.poll.interval.ms": true},
			[]string{`Config.Overrides["max.poll.interval.ms"] = true`, "integer number of milliseconds"}},
		{24 * time.Hour, nil, []string{"drain timeout 24h0m0s", "above librdkafka's maximum 86400000"}},
	} {
		cfg := baseConfig()
		cfg.Overrides = tc.ov
		k, err := NewSource(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = k.cfg.configMap(tc.drain)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("drain %v, overrides %v: configMap = %v, want an error containing %q", tc.drain, tc.ov, err, w)
			}
		}
	}
}

// Run reports the contradiction before creating the client and before any
// Group call but DrainTimeout.
func TestRunRejectsPollIntervalBelowDrain(t *testing.T) {
	cfg := baseConfig()
	cfg.Overrides = map[string]any{"max.poll.interval.ms": 10000}
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := newFakeGroup()
	g.drain = 30 * time.Second
	err = src.Run(t.Context(), g)
	if err == nil || !strings.Contains(err.Error(), "max.poll.interval.ms") || !strings.Contains(err.Error(), "drain timeout 30s") {
		t.Fatalf("Run = %v, want an error naming max.poll.interval.ms and the drain timeout", err)
	}
	g.with(func(f *fakeGroup) {
		if f.drainCalls != 1 || f.joins+f.polls+len(f.assigns)+len(f.commits)+f.shutdowns != 0 {
			t.Errorf("Group calls before the error: DrainTimeout %d, Joined %d, Polled %d, Assign %d, Committed %d, Shutdown %d",
				f.drainCalls, f.joins, f.polls, len(f.assigns), len(f.commits), f.shutdowns)
		}
	})
}
