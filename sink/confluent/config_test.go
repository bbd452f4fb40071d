package confluent_test

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// logLines is a slog handler keeping the "message" attribute of every
// librdkafka log record, signalling each one on added.
type logLines struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func newLogLines() *logLines { return &logLines{added: make(chan struct{}, 1)} }

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "message" {
			l.mu.Lock()
			l.lines = append(l.lines, strings.TrimSpace(a.Value.String()))
			l.mu.Unlock()
			select {
			case l.added <- struct{}{}:
			default:
			}
		}
		return true
	})
	return nil
}

// properties waits until librdkafka dumped its configuration (debug
// "conf": one "name = value" line per property the application set, the
// topic properties last) and returns it by canonical name.
func (l *logLines) properties(t *testing.T) map[string]string {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		props := map[string]string{}
		for _, s := range l.lines {
			_, prop, ok := strings.Cut(s, "]: ")
			if name, value, ok2 := strings.Cut(strings.TrimSpace(prop), " = "); ok && ok2 {
				props[name] = value
			}
		}
		l.mu.Unlock()
		if _, done := props["message.timeout.ms"]; done {
			return props
		}
		select {
		case <-l.added:
		case <-deadline.C:
			t.Fatalf("librdkafka dumped no configuration after %v", wait)
			return nil
		}
	}
}

// librdkafka dumps the properties the application set when debug
// includes "conf": by default the client really runs with linger.ms 5 (as
// the ProducerConfig doc says; librdkafka's canonical name is
// queue.buffering.max.ms), acks=all and idempotence; an override replaces
// a default.
func TestProducerEffectiveConfig(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	for _, tc := range []struct {
		name      string
		overrides map[string]any
		want      map[string]string
	}{
		{"defaults", nil, map[string]string{
			"queue.buffering.max.ms": "5",
			"request.required.acks":  "-1",
			"enable.idempotence":     "true",
			"message.timeout.ms":     "30000",
			// Undelivered copies bounded by pipeline's default budget.
			"queue.buffering.max.kbytes": "262144",
		}},
		{"override replaces default", map[string]any{"linger.ms": 50}, map[string]string{"queue.buffering.max.ms": "50"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := newLogLines()
			overrides := map[string]any{"debug": "conf"}
			maps.Copy(overrides, tc.overrides)
			p, err := confluent.NewProducer(confluent.ProducerConfig{Brokers: b.Addrs(), Logger: slog.New(logs), Overrides: overrides})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			props := logs.properties(t)
			for name, want := range tc.want {
				if got := props[name]; got != want {
					t.Errorf("librdkafka runs with %s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// Bad configuration is refused with an error naming the field or key.
func TestNewProducerRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  confluent.ProducerConfig
		want string
	}{
		{"no brokers", confluent.ProducerConfig{}, "ProducerConfig.Brokers is empty"},
		{"blank broker", confluent.ProducerConfig{Brokers: []string{"localhost:9092", " "}}, "ProducerConfig.Brokers[1] is empty"},
		{"bootstrap.servers", confluent.ProducerConfig{Brokers: []string{"localhost:9092"},
			Overrides: map[string]any{"bootstrap.servers": "x:1"}}, `ProducerConfig.Overrides["bootstrap.servers"] cannot be overridden`},
		{"go.delivery.reports", confluent.ProducerConfig{Brokers: []string{"localhost:9092"},
			Overrides: map[string]any{"go.delivery.reports": false}}, `ProducerConfig.Overrides["go.delivery.reports"] cannot be overridden`},
		{"negative CloseTimeout", confluent.ProducerConfig{Brokers: []string{"localhost:9092"}, CloseTimeout: -time.Second},
			"ProducerConfig.CloseTimeout is -1s"},
		{"unknown property", confluent.ProducerConfig{Brokers: []string{"localhost:9092"},
			Overrides: map[string]any{"no.such.property": 1}}, `No such configuration property: "no.such.property"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := confluent.NewProducer(tc.cfg)
			if err == nil {
				p.Close()
				t.Fatalf("NewProducer(%+v) = nil error, want one containing %q", tc.cfg, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewProducer(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
			}
		})
	}
}
