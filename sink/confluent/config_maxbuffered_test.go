package confluent_test

import (
	"fmt"
	"log/slog"
	"strconv"
	"testing"

	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The Produce stages' share is taken from the queue.buffering.max.messages
// librdkafka really runs with, however an override spells a value
// librdkafka accepts: it reads an integer property as C's strtol with
// base 0 does (spaces before, a sign, 0x for hex, a leading 0 for octal,
// anything after the digits ignored), so " 5000", "0x1388" and "5000abc"
// run with 5,000, "05000" with 2,560 and "5e3" with 5. A value outside
// 0..2147483647 is refused. Without the override it is librdkafka's
// default (nil below).
func TestMaxBufferedIsWhatLibrdkafkaRunsWith(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	for _, v := range []any{nil, 5000, 5000.0, "5000", " 5000", "5000 ", "+5000", "0x1388", "05000", "5e3", "5000abc", "2147483647", "0", "-5"} {
		t.Run(fmt.Sprintf("%q", fmt.Sprint(v)), func(t *testing.T) {
			logs := newLogLines()
			overrides := map[string]any{"debug": "conf"}
			if v != nil {
				overrides["queue.buffering.max.messages"] = v
			}
			p, err := confluent.NewProducer(confluent.ProducerConfig{Brokers: b.Addrs(), Logger: slog.New(logs), Overrides: overrides})
			if v == "-5" {
				if err == nil {
					p.Close()
					t.Fatal("NewProducer accepted queue.buffering.max.messages -5")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			props := logs.properties(t)
			dumped, ok := props["queue.buffering.max.messages"]
			if !ok && v == nil {
				dumped = "100000" // librdkafka dumps only what was set: its default
			}
			runs, err := strconv.Atoi(dumped)
			if err != nil {
				t.Fatalf("librdkafka dumped queue.buffering.max.messages = %q", dumped)
			}
			if got := confluent.MaxBuffered(p); got != runs {
				t.Errorf("override %#v: librdkafka runs with queue.buffering.max.messages = %d, MaxBuffered = %d", v, runs, got)
			}
		})
	}
}
