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

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/exactlyonce"
	"github.com/sluice-go/sluice/internal/headers"
	"github.com/sluice-go/sluice/internal/librdkafka"
	"github.com/sluice-go/sluice/internal/rebalance"
)

// Source is a [sluice.Source] consuming a Source consumer group through
// librdkafka (confluent-kafka-go). Create it with [NewSource]; its Run may be
// called once.
type Source struct {
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
	// polled, when set (tests), is called on the poll goroutine after
	// every poll with the records the core holds for paused partitions
	// and their weight.
	polled func(records int, bytes int64)
	// reportRecreated, when set (tests), is given at the start of Run
	// what the log goroutine reports a recreated topic with (topic, new
	// topic ID); servedRecreated, when set (tests), is called on the poll
	// goroutine after each such report was served (topicsRecreated).
	reportRecreated func(report func(topic, id string))
	servedRecreated func(topic, id string)
	// txn holds the transactional producer confluent.NewTransactionalProducer
	// bound to the source (through librdkafka.SourceSlot); Run takes it.
	txn exactlyonce.Slot[*kafka.Producer]
}

// init lets package sink/confluent reach a source's exactly-once slot without an
// exported method (see librdkafka.SourceSlot).
func init() {
	librdkafka.SourceSlot = func(src any) *exactlyonce.Slot[*kafka.Producer] { return &src.(*Source).txn }
}

var _ sluice.Source = (*Source)(nil)

// NewSource validates cfg and returns a source. Errors name the offending
// Config field. librdkafka itself validates property names and values in
// Overrides when Run creates the client; Run returns that error before
// calling any Group method.
func NewSource(cfg Config) (*Source, error) {
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
	return &Source{
		cfg:           cfg,
		log:           rebalance.SourceLogger(cfg.Logger, "sluice/source", cfg.Group),
		commitOffsets: (*kafka.Consumer).CommitOffsets,
	}, nil
}

// Run joins the group, subscribes to Config.Topics and feeds the records to
// g until ctx is done; see [sluice.Source] for the contract. All calls to
// g happen on the calling goroutine.
//
// Before anything else Run derives the group timeouts from
// g.DrainTimeout() (see the package documentation, "Timeouts") and returns
// an error naming the property if an override contradicts them, without
// calling any other Group method; so it does for a property librdkafka
// rejects, and for a topic of Config.Topics that does not exist (checked
// before joining, unless Config.SkipTopicCheck; the error wraps
// sluice.ErrMissingTopic).
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
// moved on (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, ..., also a
// REBALANCE_IN_PROGRESS still answered when the final commit's time is up)
// is no error, only a warning: the next owner starts from the previous
// commit, so records are processed again, none is lost. The exactly-once
// mode treats a refused final transaction the same way. A Close
// that did not finish in time is left running on its own goroutine
// (librdkafka keeps the handle until it ends).
//
// On a fatal librdkafka error Run loses every owned partition and returns
// the error. A second call returns an error.
func (k *Source) Run(ctx context.Context, g sluice.Group) error {
	if !k.started.CompareAndSwap(false, true) {
		return errors.New("source: Source.Run called twice")
	}
	binding, bound := k.txn.Take() // from here on no producer can bind to k
	if err := k.cfg.settings().CheckExactlyOnce(bound); err != nil {
		return err
	}
	cm, err := k.cfg.configMap(g.DrainTimeout())
	if err != nil {
		return err
	}
	k.cfg.prefetch(cm, budgetOf(g)) // config_prefetch.go
	txns, err := k.initTransactions(binding, bound)
	if err != nil {
		return err
	}
	debug, userDebug := withMetadataDebug(cm["debug"]) // recreated.go
	cm["debug"] = debug
	k.log.Debug("creating consumer", librdkafka.Redacted(cm)...)
	c, err := kafka.NewConsumer(&cm)
	if err != nil {
		return fmt.Errorf("source: create consumer: %w", err)
	}
	logsDone, logsStop := make(chan struct{}), make(chan struct{})
	recreated := new(recreatedTopics)
	if k.reportRecreated != nil {
		k.reportRecreated(recreated.add)
	}
	go forwardLogs(k.log, c.Logs(), logsStop, logsDone, recreated.add, userDebug)

	g = txns.wrap(ctx, c, g)
	r := &runner{
		k:           k,
		c:           c,
		g:           g,
		txns:        txns,
		log:         k.log,
		leftPaused:  make(map[sluice.TopicPartition]bool),
		highs:       make(map[sluice.TopicPartition]int64),
		recreated:   recreated,
		restartedIn: make(map[sluice.TopicPartition]string),
		topicIDs:    make(topicIDs),
	}
	r.core = rebalance.New(r, g, rebalance.Options{
		Settings:   k.cfg.settings(),
		Log:        k.log,
		Background: &k.background,
	})
	txns.core = r.core
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
		r.inClose = true
		go func() { _ = c.Close() }()
	case !r.closed:
		// Subscribe failed: nothing was joined, Close has nothing to wait for.
		err = errors.Join(err, r.Close(time.Now().Add(k.cfg.closeTimeout())))
	}
	if r.closeFinished {
		<-logsDone // Close closed the logs channel: forward what is left
	} else {
		close(logsStop)
		<-logsDone
	}
	return txns.eg.JoinErr(err)
}

// runner is the state of one Run and the [rebalance.Backend] of its
// core: it is only touched by the poll goroutine (rebalance callbacks run
// inside Poll on that goroutine), except by the callbacks librdkafka runs
// inside Close, on the close goroutine, which only read fields set before
// Close started (see answerInClose), and by Commit, which reads only
// fields set before Run started.
type runner struct {
	k    *Source
	c    *kafka.Consumer
	g    sluice.Group
	log  *slog.Logger
	core *rebalance.Core // owned set, batch, pause/resume, commits
	txns *transactions   // exactly-once (transactions.go); wraps nothing without a transactional producer
	hdrs headers.Slab    // header slices of converted records (toRecord)

	// leftPaused: partitions given up while paused; librdkafka keeps them
	// paused, so a later assignment resumes them.
	leftPaused map[sluice.TopicPartition]bool

	// inClose: the client's Close runs (on its own goroutine). Callbacks
	// then only answer librdkafka and touch nothing else of the runner.
	inClose bool
	// closed: Close ran; closeFinished: the client's Close returned in time.
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
	highs      map[sluice.TopicPartition]int64 // last high watermark reported
	fatal      error                           // set by callbacks; ends the loop
	// recreated: the topics librdkafka reported deleted and created again,
	// filled by the log goroutine, served by topicsRecreated.
	recreated *recreatedTopics
	// restartedIn: the topic ID each partition started anew by
	// topicsRecreated was started in, as learnt just before its seek
	// (recreated.go); a rebalance of the partition forgets it.
	restartedIn map[sluice.TopicPartition]string
	// topicIDs: under KIP-848, the topic ID of each assigned topic, checked
	// before a revoke commits (topic_ids.go).
	topicIDs topicIDs
}

var _ rebalance.Backend = (*runner)(nil)

func (r *runner) run(ctx context.Context) error {
	if err := r.checkTopics(ctx); err != nil {
		return err
	}
	if err := r.c.SubscribeTopics(r.k.cfg.Topics, r.rebalance); err != nil {
		return fmt.Errorf("source: subscribe: %w", err)
	}
	return r.core.Run(ctx)
}

// Poll polls one event (waiting up to timeout), then keeps polling
// without waiting while events are messages, batching consecutive records
// of one partition into one Deliver call (rebalance.Core.Add).
func (r *runner) Poll(_ context.Context, timeout time.Duration) error {
	r.pollBatch(int(timeout.Milliseconds()))
	r.g.Polled()
	if r.k.polled != nil {
		r.k.polled(r.core.Held())
	}
	if r.fatal == nil {
		return r.txns.eg.Err() // exactly-once stopped (fenced, or an abort it could not rewind after): ends Run like a fatal error
	}
	return r.fatal
}

func (r *runner) pollBatch(timeoutMs int) {
	defer r.core.Flush()
	for n := 0; n < 4*rebalance.MaxBatch; n++ {
		if r.recreated.waiting.Load() {
			r.core.Flush()
			r.topicsRecreated() // recreated.go: before any record of the new topic is added
			if r.fatal != nil {
				return
			}
		}
		ev := r.c.Poll(timeoutMs)
		timeoutMs = 0
		if ev == nil {
			return
		}
		m, ok := ev.(*kafka.Message)
		if !ok {
			r.core.Flush()
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
	if r.core.Closing() {
		return // after Shutdown: nothing is delivered any more
	}
	if tp := m.TopicPartition; tp.Error != nil {
		r.core.Flush()
		r.log.Warn("consume error", "topic", topicOf(tp), "partition", tp.Partition, "err", tp.Error)
		return
	}
	r.core.Add(toRecord(m, &r.hdrs)) // fenced there: a stale message around a rebalance is dropped
}

// toRecord converts a message librdkafka returned into a record, its
// headers carved out of hdrs (no allocation per record).
func toRecord(m *kafka.Message, hdrs *headers.Slab) sluice.Record {
	return sluice.Record{
		Topic:     topicOf(m.TopicPartition),
		Partition: m.TopicPartition.Partition,
		Offset:    int64(m.TopicPartition.Offset),
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Timestamp,
		Headers:   headers.Convert(hdrs, m.Headers),
	}
}

// Pause pauses tp in librdkafka.
func (r *runner) Pause(tp sluice.TopicPartition) error {
	return r.c.Pause(kafkaTPs([]sluice.TopicPartition{tp}))
}

// Resume resumes tps in librdkafka.
func (r *runner) Resume(tps []sluice.TopicPartition) error { return r.c.Resume(kafkaTPs(tps)) }

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

// Fail gives every owned partition up without committing after a fatal
// error. A client that raised a fatal error is unusable (Run closes it in
// the background); when the source failed (an *assign call) and the client
// did not, it leaves the group before closing it, as on shutdown.
func (r *runner) Fail(err error) error {
	r.core.LoseAll()
	if r.fatalClose {
		return err
	}
	return errors.Join(err, r.core.LeaveAndClose(time.Now()))
}

// Interval reports the high watermarks librdkafka learnt from its last
// fetch responses (a local lookup, no request) when they moved.
func (r *runner) Interval() {
	for _, tp := range r.core.OwnedList() {
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

func topicOf(tp kafka.TopicPartition) string {
	if tp.Topic == nil {
		return ""
	}
	return *tp.Topic
}

func kafkaTPs(tps []sluice.TopicPartition) []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, len(tps))
	for i, tp := range tps {
		topic := tp.Topic
		out[i] = kafka.TopicPartition{Topic: &topic, Partition: tp.Partition}
	}
	return out
}

func pipelineTPs(tps []kafka.TopicPartition) []sluice.TopicPartition {
	out := make([]sluice.TopicPartition, len(tps))
	for i, tp := range tps {
		out[i] = sluice.TopicPartition{Topic: topicOf(tp), Partition: tp.Partition}
	}
	return out
}
