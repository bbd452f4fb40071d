package confluent_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Overrides decoded from JSON (or YAML) hold float64 numbers: they are
// converted as the source converts them (integral to int, librdkafka's
// float properties to text), so the client runs with them.
func TestProducerOverridesFromJSON(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	var overrides map[string]any
	if err := json.Unmarshal([]byte(`{"debug": "conf", "queue.buffering.max.messages": 1e6, "linger.ms": 0.5}`), &overrides); err != nil {
		t.Fatal(err)
	}
	logs := newLogLines()
	p, err := confluent.NewProducer(confluent.ProducerConfig{Brokers: b.Addrs(), Logger: slog.New(logs), Overrides: overrides})
	if err != nil {
		t.Fatalf("NewProducer = %v, want the JSON numbers accepted", err)
	}
	defer p.Close()
	props := logs.properties(t)
	for name, want := range map[string]string{"queue.buffering.max.messages": "1000000", "queue.buffering.max.ms": "0.5"} {
		if got := props[name]; got != want {
			t.Errorf("librdkafka runs with %s = %q, want %q", name, got, want)
		}
	}
}

// A non-integral number for an integer property is an error naming it.
func TestProducerOverrideNonIntegralIsAnError(t *testing.T) {
	_, err := confluent.NewProducer(confluent.ProducerConfig{Brokers: []string{"localhost:9092"}, Overrides: map[string]any{"batch.size": 1.5}})
	want := `confluent: ProducerConfig.Overrides["batch.size"] = 1.5: librdkafka wants an integer for this property`
	if err == nil || err.Error() != want {
		t.Fatalf("NewProducer = %v, want %s", err, want)
	}
}

// syncBuffer is a bytes.Buffer safe for the producer's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The producer logs its configuration at debug level with every secret
// redacted.
func TestProducerConfigLogRedactsSecrets(t *testing.T) {
	var buf syncBuffer
	secrets := map[string]string{
		"sasl.password": "hunter2", "sasl.oauthbearer.config": "principal=admin clientSecret=oauthcfg",
		"sasl.oauthbearer.client.secret": "clsecret", "ssl.key.password": "keypass", "ssl.keystore.password": "storepass",
	}
	overrides := map[string]any{"client.id": "visible"}
	for k, v := range secrets {
		overrides[k] = v
	}
	p, err := confluent.NewProducer(confluent.ProducerConfig{Brokers: []string{"localhost:9092"}, Overrides: overrides,
		Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Close()
	out := buf.String()
	if !strings.Contains(out, "creating producer") || !strings.Contains(out, "client.id=visible") {
		t.Fatalf("no configuration line naming client.id: %s", out)
	}
	for k, v := range secrets {
		if !strings.Contains(out, k+"=[redacted]") || strings.Contains(out, v) {
			t.Errorf("%s is not redacted: %s", k, out)
		}
	}
}
