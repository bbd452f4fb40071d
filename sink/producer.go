package sink

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// ErrClosed is wrapped by the errors of produce calls made after (or
// outstanding when) [Producer.Close] closed the producer.
var ErrClosed = errors.New("sink: the producer is closed")

// Producer is a confluent-kafka-go producer shared by the stages of every
// partition and by the dead-letter destination. It is safe for concurrent
// use. Close it after pipeline.Run returned.
type Producer struct {
	p            *kafka.Producer
	logger       *slog.Logger
	closeTimeout time.Duration

	// mu is held for reading around every call that hands a message to
	// the client; Close takes it to set closing, so no such call runs
	// once the client starts closing.
	mu      sync.RWMutex
	closing atomic.Bool
	// pending counts messages handed to the client whose delivery report
	// no receiver has read yet; idle is closed when it drops to zero
	// while closing.
	pending  atomic.Int64
	idle     chan struct{}
	idleOnce sync.Once
	// gone is closed once the client delivers no more reports (its
	// poller stopped): receivers stop waiting then.
	gone chan struct{}

	umu         sync.Mutex
	undelivered []UndeliveredMessage // purged by Close, as receivers read them

	wg       sync.WaitGroup // events and logs goroutines
	once     sync.Once
	closeErr error
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
	p := &Producer{
		p:            kp,
		logger:       logger,
		closeTimeout: cfg.CloseTimeout,
		idle:         make(chan struct{}),
		gone:         make(chan struct{}),
	}
	if p.closeTimeout == 0 {
		p.closeTimeout = DefaultCloseTimeout
	}
	p.wg.Go(p.events)
	p.wg.Go(p.logs)
	return p, nil
}

// send hands msg to the client, its delivery report to go to report. It
// fails with ErrClosed once Close started. Every message it accepts must
// have its report passed to received.
func (p *Producer) send(msg *kafka.Message, report chan kafka.Event) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closing.Load() {
		return ErrClosed
	}
	p.pending.Add(1)
	if err := p.p.Produce(msg, report); err != nil {
		p.received()
		return err
	}
	return nil
}

// received records that a receiver read a successful delivery report.
func (p *Producer) received() {
	if p.pending.Add(-1) == 0 && p.closing.Load() {
		p.idleOnce.Do(func() { close(p.idle) })
	}
}

// receivedFailure records that a receiver read a failed delivery report
// with error err, for message u. It reports whether the failure is Close
// giving up on the message (then u is kept for Close's error).
func (p *Producer) receivedFailure(err error, u UndeliveredMessage) bool {
	var kerr kafka.Error
	purged := errors.As(err, &kerr) && (kerr.Code() == kafka.ErrPurgeQueue || kerr.Code() == kafka.ErrPurgeInflight)
	if !purged {
		p.received()
		return false
	}
	// Under umu, so that Close sees each message either pending or
	// undelivered, never both.
	p.umu.Lock()
	defer p.umu.Unlock()
	p.undelivered = append(p.undelivered, u)
	p.received()
	return true
}

// events logs what librdkafka reports outside delivery reports (which go
// to the receivers' own channels). It returns when the client closed its
// event channel, after its poller stopped: no report is delivered after.
func (p *Producer) events() {
	defer close(p.gone)
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
