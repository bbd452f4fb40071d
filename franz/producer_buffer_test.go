package franz_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A message larger than kgo.MaxBufferedBytes can never fit the buffer:
// kgo fails it with MESSAGE_TOO_LARGE at once, and so does the producer,
// instead of waiting for room that never comes (until the caller's
// context ends).
func TestMessageLargerThanBufferFails(t *testing.T) {
	b := kafkatest.NewBroker(t, kafkatest.WithTopic("dlq", 1))
	p, err := franz.NewProducer(franz.ProducerConfig{Brokers: b.Addrs(), Opts: []kgo.Opt{kgo.MaxBufferedBytes(64)}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := sluice.Record{Topic: "in", Offset: 7, Value: make([]byte, 200)}
	err = p.DeadLetter("dlq")(ctx, sluice.DeadLetter{Record: rec, Stage: "decode", Err: errors.New("bad")})
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("dead letter of 200 B with kgo.MaxBufferedBytes(64): %v; want MESSAGE_TOO_LARGE", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the dead letter waited for its context to end: %v", err)
	}
}

// NewProducer bounds kgo's produce buffer in bytes by default
// (DefaultProducerMaxBufferedBytes); kgo.MaxBufferedBytes in Opts wins.
// The Produce stages share kgo.MaxBufferedRecords (kgo's default, or what
// Opts set) as their bound of outstanding messages.
func TestProducerBufferBounds(t *testing.T) {
	for _, c := range []struct {
		name    string
		opts    []kgo.Opt
		bytes   int64
		records int
	}{
		{"default", nil, franz.DefaultProducerMaxBufferedBytes, 50000},
		{"Opts", []kgo.Opt{kgo.MaxBufferedBytes(1 << 20), kgo.MaxBufferedRecords(3000)}, 1 << 20, 3000},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := franz.NewProducer(franz.ProducerConfig{Brokers: []string{"127.0.0.1:1"}, Opts: c.opts})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if got := franz.MaxBufferedBytesOf(p); got != c.bytes {
				t.Errorf("kgo.MaxBufferedBytes = %d, want %d", got, c.bytes)
			}
			if got := franz.MaxBuffered(p); got != c.records {
				t.Errorf("MaxBuffered = %d, want %d", got, c.records)
			}
		})
	}
}
