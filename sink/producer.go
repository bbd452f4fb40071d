package sink

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Producer is a confluent-kafka-go producer shared by the stages of every
// partition. It is safe for concurrent use. Close it after pipeline.Run
// returned.
type Producer struct {
	p      *kafka.Producer
	logger *slog.Logger
	wg     sync.WaitGroup
	once   sync.Once
}

// NewProducer validates cfg and connects a producer.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	m, err := producerProperties(cfg)
	if err != nil {
		return nil, err
	}
	kp, err := kafka.NewProducer(&m)
	if err != nil {
		return nil, fmt.Errorf("sink: creating the producer: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Producer{p: kp, logger: logger}
	p.wg.Go(p.events)
	p.wg.Go(p.logs)
	return p, nil
}

// events logs what librdkafka reports outside delivery reports (which go
// to the producing stages' own channels).
func (p *Producer) events() {
	for ev := range p.p.Events() {
		switch e := ev.(type) {
		case kafka.Error:
			if e.IsFatal() {
				p.logger.Error("sink: fatal producer error", "err", e)
			} else {
				p.logger.Warn("sink: producer error", "err", e)
			}
		case *kafka.Message:
			// A delivery report without its own channel: not ours.
		}
	}
}

func (p *Producer) logs() {
	for l := range p.p.Logs() {
		p.logger.Debug("librdkafka", "name", l.Name, "tag", l.Tag, "level", l.Level, "message", l.Message)
	}
}

// Close flushes what is still queued (up to 30 s) and closes the producer.
// It is idempotent and must be called after pipeline.Run returned.
func (p *Producer) Close() {
	p.once.Do(func() {
		if n := p.p.Flush(30_000); n > 0 {
			p.logger.Warn("sink: closing the producer with undelivered messages", "count", n)
		}
		p.p.Close()
		p.wg.Wait()
	})
}
