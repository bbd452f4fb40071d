package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/pipeline"
)

const (
	// pollIdle is the Poll timeout while nothing is paused: it bounds how
	// long a cancelled ctx waits for the loop to notice.
	pollIdle = 100 * time.Millisecond
	// pollPaused is the Poll timeout while some partition is paused: it
	// bounds how late a partition listed by Group.Resumable is resumed.
	pollPaused = 10 * time.Millisecond
	// maxBatch caps the records handed to one Deliver call. It also bounds
	// how far the runtime's in-flight budget can be overshot: by one
	// batch per partition that is not paused yet.
	maxBatch = 128
)

// Kafka is a [pipeline.Source] consuming a Kafka consumer group through
// librdkafka (confluent-kafka-go). Create it with [NewKafka]; its Run may be
// called once.
type Kafka struct {
	cfg     Config
	log     *slog.Logger
	started atomic.Bool

	// commitOffsets is (*kafka.Consumer).CommitOffsets; tests replace it
	// to hold or fail commits. It runs on a goroutine of its own, one call
	// at a time.
	commitOffsets func(*kafka.Consumer, []kafka.TopicPartition) ([]kafka.TopicPartition, error)
	// background counts the goroutines of client calls (commits, Close);
	// those Run stopped waiting for (past their bound) end when librdkafka
	// answers. Tests wait for them.
	background sync.WaitGroup
	// closeCallbacks counts rebalance callbacks librdkafka ran inside
	// Close. The shutdown sequence leaves the group first, so it stays
	// zero unless leaving did not finish in time.
	closeCallbacks atomic.Int64
}

var _ pipeline.Source = (*Kafka)(nil)

// NewKafka validates cfg and returns a source. Errors name the offending
// Config field. librdkafka itself validates property names and values in
// Overrides when Run creates the client; Run returns that error before
// calling any Group method.
func NewKafka(cfg Config) (*Kafka, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ov, err := cfg.normalizedOverrides()
	if err != nil {
		return nil, err
	}
	cfg.Overrides = ov
	cfg.Brokers = append([]string(nil), cfg.Brokers...)
	cfg.Topics = append([]string(nil), cfg.Topics...)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Kafka{
		cfg:           cfg,
		log:           log.With("component", "sluice/source", "group", cfg.Group),
		commitOffsets: (*kafka.Consumer).CommitOffsets,
	}, nil
}

// Run joins the group, subscribes to Config.Topics and feeds the records to
// g until ctx is done; see [pipeline.Source] for the contract. All calls to
// g happen on the calling goroutine.
//
// Before anything else Run derives the group timeouts from
// g.DrainTimeout() (see the package documentation, "Timeouts") and returns
// an error naming the property if an override contradicts them, without
// calling any other Group method; so it does for a property librdkafka
// rejects.
//
// When ctx is done Run shuts down in this order, each step bounded (see
// Config.CloseTimeout): Group.Shutdown (the drain, bounded by the
// runtime); the final synchronous commit of what it returned (and of the
// offsets still pending), sent once the background commit in flight was
// answered and retried while the group is rebalancing; leaving the group (unsubscribe, then
// serving the resulting revoke in the poll loop until the assignment is
// empty); closing the client, which then has nothing left to call back
// for. It returns nil when all of them finished, else an error naming
// each step that did not (the final commit, that failed or did not finish
// in time; closing the client). A commit the group rejects because it
// moved on (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, ...) is no error: the
// next owner starts from the previous commit. A Close
// that did not finish in time is left running on its own goroutine
// (librdkafka keeps the handle until it ends).
//
// On a fatal librdkafka error Run loses every owned partition and returns
// the error. A second call returns an error.
func (k *Kafka) Run(ctx context.Context, g pipeline.Group) error {
	if !k.started.CompareAndSwap(false, true) {
		return errors.New("source: Kafka.Run called twice")
	}
	cm, err := k.cfg.configMap(g.DrainTimeout())
	if err != nil {
		return err
	}
	k.log.Debug("creating consumer", redacted(cm)...)
	c, err := kafka.NewConsumer(&cm)
	if err != nil {
		return fmt.Errorf("source: create consumer: %w", err)
	}
	logsDone, logsStop := make(chan struct{}), make(chan struct{})
	go forwardLogs(k.log, c.Logs(), logsStop, logsDone)

	r := &runner{
		k:          k,
		c:          c,
		g:          g,
		log:        k.log,
		owned:      make(map[pipeline.TopicPartition]bool),
		paused:     make(map[pipeline.TopicPartition]bool),
		leftPaused: make(map[pipeline.TopicPartition]bool),
		ownership:  make(map[pipeline.TopicPartition]uint64),
		pending:    make(map[pipeline.TopicPartition]int64),
		highs:      make(map[pipeline.TopicPartition]int64),
		batch:      make([]pipeline.Record, 0, maxBatch),
		collectAt:  time.Now().Add(k.cfg.commitInterval()),
	}
	err = r.run(ctx)
	switch {
	case r.fatalClose:
		// confluent-kafka-go v2.11.1's Close never returns once the client
		// raised a fatal error (it ignores rd_kafka_consumer_close_queue's
		// error and waits for a close that never starts; fixed upstream
		// by confluent-kafka-go#1588). Closing in the background keeps
		// Run from hanging; with v2.11.1 that goroutine and the librdkafka
		// handle are leaked until the process exits.
		k.log.Warn("closing the consumer in the background after a fatal error; with confluent-kafka-go v2.11.1 its handle leaks")
		r.inClose, r.closing = true, true
		go func() { _ = c.Close() }()
	case !r.closed:
		// Subscribe failed: nothing was joined, Close has nothing to wait for.
		err = errors.Join(err, r.closeClient(time.Now().Add(k.cfg.closeTimeout())))
	}
	if r.closeFinished {
		<-logsDone // Close closed the logs channel: forward what is left
	} else {
		close(logsStop)
		<-logsDone
	}
	return err
}

// runner is the state of one Run: it is only touched by the poll goroutine
// (rebalance callbacks run inside Poll on that goroutine), except by the
// callbacks librdkafka runs inside Close, on the close goroutine, which
// only read fields set before Close started (see answerInClose).
type runner struct {
	k   *Kafka
	c   *kafka.Consumer
	g   pipeline.Group
	log *slog.Logger

	owned map[pipeline.TopicPartition]bool // fence: partitions we may deliver and commit
	// ownership numbers each assignment of a partition (from assigns),
	// so that a failed commit of an earlier ownership is not retried.
	ownership map[pipeline.TopicPartition]uint64
	assigns   uint64
	paused    map[pipeline.TopicPartition]bool // partitions paused on Deliver's request
	// leftPaused: partitions given up while paused; librdkafka keeps them
	// paused, so a later assignment resumes them.
	leftPaused map[pipeline.TopicPartition]bool
	// unresumed: partitions whose Resume failed, retried every loop.
	unresumed []pipeline.TopicPartition

	batchTP pipeline.TopicPartition
	batch   []pipeline.Record // pending records of batchTP, not yet delivered

	collectAt time.Time // next time to collect Group.Offsets
	// pending: the newest offsets of owned partitions not sent yet, or
	// whose background commit failed (Group.Offsets reports an offset
	// once, when it moves). See commit.go.
	pending map[pipeline.TopicPartition]int64
	// commitDue: an interval passed since the last background commit was
	// sent; inflight: the one commit sent and not handled yet, or nil.
	commitDue bool
	inflight  *commitRequest

	// closing: Shutdown or Lose-all done. Callbacks no longer call g and
	// records are dropped; owned still fences the final commit.
	closing bool
	// inClose: the client's Close runs (on its own goroutine). Callbacks
	// then only answer librdkafka and touch nothing else of the runner.
	inClose bool
	// closed: closeClient ran; closeFinished: Close returned in time.
	closed, closeFinished bool
	// callbacks counts rebalance callbacks served (leave waits for quiet).
	callbacks int
	// protocol caches librdkafka's rebalance protocol ("EAGER",
	// "COOPERATIVE") once known, so that no callback served inside Close
	// needs to ask for it (see rebalance).
	protocol string
	// fatalClose is set when the client raised a fatal error, whose Close
	// hangs (see Run).
	fatalClose bool
	joined     bool                              // Group.Joined reported
	highs      map[pipeline.TopicPartition]int64 // last high watermark reported
	fatal      error                             // set by callbacks; ends the loop
}

func (r *runner) run(ctx context.Context) error {
	if err := r.c.SubscribeTopics(r.k.cfg.Topics, r.rebalance); err != nil {
		return fmt.Errorf("source: subscribe: %w", err)
	}
	for {
		if ctx.Err() != nil {
			return r.stop()
		}
		timeout := pollIdle
		if len(r.paused) > 0 || len(r.unresumed) > 0 {
			timeout = pollPaused
		}
		r.pollBatch(int(timeout.Milliseconds()))
		r.g.Polled()
		if r.fatal != nil {
			r.loseAll()
			if r.fatalClose {
				return r.fatal // the client is unusable; Run closes it in the background
			}
			// The source failed (an *assign call), the client did not:
			// leave the group before closing it, as on shutdown.
			return errors.Join(r.fatal, r.leaveAndClose(time.Now()))
		}
		r.resume()
		r.reap()
		if now := time.Now(); !now.Before(r.collectAt) {
			r.collectAt = now.Add(r.k.cfg.commitInterval())
			r.collect(r.g.Offsets())
			r.commitDue = true
			r.reportHighWatermarks()
		}
		r.commitPending()
	}
}

// pollBatch polls one event (waiting up to timeoutMs), then keeps polling
// without waiting while events are messages, batching consecutive records
// of one partition into one Deliver call.
func (r *runner) pollBatch(timeoutMs int) {
	defer r.flush()
	for n := 0; n < 4*maxBatch; n++ {
		ev := r.c.Poll(timeoutMs)
		timeoutMs = 0
		if ev == nil {
			return
		}
		m, ok := ev.(*kafka.Message)
		if !ok {
			r.flush()
			r.event(ev)
			if r.fatal != nil {
				return
			}
			continue
		}
		r.message(m)
	}
}

func (r *runner) message(m *kafka.Message) {
	if r.closing {
		return // after Shutdown: nothing is delivered any more
	}
	tp := m.TopicPartition
	if tp.Error != nil {
		r.flush()
		r.log.Warn("consume error", "topic", topicOf(tp), "partition", tp.Partition, "err", tp.Error)
		return
	}
	ptp := pipeline.TopicPartition{Topic: topicOf(tp), Partition: tp.Partition}
	if !r.owned[ptp] {
		return // fenced: not ours (stale message around a rebalance)
	}
	if len(r.batch) > 0 && (ptp != r.batchTP || len(r.batch) == maxBatch) {
		r.flush()
	}
	r.batchTP = ptp
	rec := pipeline.Record{
		Topic:     ptp.Topic,
		Partition: ptp.Partition,
		Offset:    int64(tp.Offset),
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Timestamp,
	}
	if len(m.Headers) > 0 {
		rec.Headers = make([]pipeline.Header, len(m.Headers))
		for i, h := range m.Headers {
			rec.Headers[i] = pipeline.Header{Key: h.Key, Value: h.Value}
		}
	}
	r.batch = append(r.batch, rec)
}

// flush delivers the pending batch and pauses its partition if asked to.
func (r *runner) flush() {
	if len(r.batch) == 0 {
		return
	}
	tp := r.batchTP
	recs := make([]pipeline.Record, len(r.batch))
	copy(recs, r.batch)
	clear(r.batch)
	r.batch = r.batch[:0]
	if !r.owned[tp] {
		return
	}
	if r.g.Deliver(tp, recs) && !r.paused[tp] {
		if err := r.c.Pause(kafkaTPs([]pipeline.TopicPartition{tp})); err != nil {
			r.log.Warn("pause failed", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			return
		}
		r.paused[tp] = true
	}
}

// resume resumes the paused partitions the group has room for again, and
// retries resumes that failed before.
func (r *runner) resume() {
	var tps []pipeline.TopicPartition
	for _, tp := range r.unresumed {
		if r.owned[tp] {
			tps = append(tps, tp)
		}
	}
	r.unresumed = nil
	if len(r.paused) > 0 {
		select {
		case <-r.g.Wake():
			for _, tp := range r.g.Resumable() {
				if r.paused[tp] && r.owned[tp] {
					tps = append(tps, tp)
					delete(r.paused, tp)
				}
			}
		default:
		}
	}
	if len(tps) == 0 {
		return
	}
	if err := r.c.Resume(kafkaTPs(tps)); err != nil {
		r.log.Warn("resume failed; retrying", "partitions", tps, "err", err)
		r.unresumed = tps
	}
}

// event handles a non-message event returned by Poll.
func (r *runner) event(ev kafka.Event) {
	switch e := ev.(type) {
	case kafka.Error:
		if e.IsFatal() {
			r.log.Error("fatal client error", "err", e)
			r.fatal = fmt.Errorf("source: fatal kafka error: %w", e)
			r.fatalClose = true
			return
		}
		logClientError(r.log, e)
	case kafka.PartitionEOF:
	default:
		r.log.Debug("ignored event", "event", ev.String())
	}
}

// loseAll gives every owned partition up without committing.
func (r *runner) loseAll() {
	r.batch = r.batch[:0]
	tps := r.ownedList()
	clear(r.owned)
	clear(r.paused)
	clear(r.pending)
	if len(tps) > 0 {
		r.g.Lose(tps)
	}
	r.closing = true
}

// reportHighWatermarks reports the high watermarks librdkafka learnt from
// its last fetch responses (a local lookup, no request) when they moved.
func (r *runner) reportHighWatermarks() {
	for tp := range r.owned {
		_, high, err := r.c.GetWatermarkOffsets(tp.Topic, tp.Partition)
		if err != nil || high < 0 {
			continue
		}
		if last, ok := r.highs[tp]; ok && last == high {
			continue
		}
		r.highs[tp] = high
		r.g.HighWatermark(tp, high)
	}
}

func (r *runner) ownedList() []pipeline.TopicPartition {
	tps := make([]pipeline.TopicPartition, 0, len(r.owned))
	for tp := range r.owned {
		tps = append(tps, tp)
	}
	return tps
}

func topicOf(tp kafka.TopicPartition) string {
	if tp.Topic == nil {
		return ""
	}
	return *tp.Topic
}

func kafkaTPs(tps []pipeline.TopicPartition) []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, len(tps))
	for i, tp := range tps {
		topic := tp.Topic
		out[i] = kafka.TopicPartition{Topic: &topic, Partition: tp.Partition}
	}
	return out
}

func pipelineTPs(tps []kafka.TopicPartition) []pipeline.TopicPartition {
	out := make([]pipeline.TopicPartition, len(tps))
	for i, tp := range tps {
		out[i] = pipeline.TopicPartition{Topic: topicOf(tp), Partition: tp.Partition}
	}
	return out
}
