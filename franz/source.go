package franz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/pipeline"
)

const (
	// pollIdle is the poll timeout while nothing is paused: it bounds how
	// long a cancelled ctx or a due commit interval waits for the loop.
	pollIdle = 100 * time.Millisecond
	// pollPaused is the poll timeout while some partition is paused: it
	// bounds how late a partition listed by Group.Resumable is resumed.
	pollPaused = 10 * time.Millisecond
	// maxBatch caps the records handed to one Deliver call, as the Kafka
	// source does. It bounds how far the runtime's in-flight budget can be
	// overshot: by one batch per partition not paused yet.
	maxBatch = 128
	// defaultFetchMaxWait replaces kgo's 5s: a resumed partition otherwise
	// waits behind a long-poll fetch of caught-up partitions.
	defaultFetchMaxWait = 100 * time.Millisecond
)

// Source is a [pipeline.Source] consuming a Kafka consumer group through
// franz-go (kgo). Create it with [NewSource]; its Run may be called once.
type Source struct {
	cfg     Config
	ut      userTimeouts // group timeouts set in Config.Opts
	log     *slog.Logger
	started atomic.Bool
	// background counts the goroutines of client calls (commits, Close);
	// those Run stopped waiting for (past their bound) end when kgo
	// answers or gives up. Tests wait for them.
	background sync.WaitGroup
}

var _ pipeline.Source = (*Source)(nil)

// NewSource validates cfg and returns a source. Errors name the offending
// Config field, or the kgo option in Config.Opts that the source does not
// allow (with the reason) or that kgo rejects. It creates no connection.
func NewSource(cfg Config) (*Source, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ut, err := checkOpts(cfg.Opts)
	if err != nil {
		return nil, err
	}
	cfg.Brokers = slices.Clone(cfg.Brokers)
	cfg.Topics = slices.Clone(cfg.Topics)
	cfg.Opts = slices.Clone(cfg.Opts)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Source{cfg: cfg, ut: ut, log: log.With("component", "sluice/franz", "group", cfg.Group)}, nil
}

// Run joins the group, consumes Config.Topics and feeds the records to g
// until ctx is done; see [pipeline.Source] for the contract. Every call to
// g happens on the calling goroutine: kgo's rebalance callbacks hand their
// work to it and wait (see the package documentation, "Rebalances").
//
// Before anything else Run derives the group timeouts from
// g.DrainTimeout() and returns an error naming kgo.RebalanceTimeout if
// Config.Opts set one too small for a revoke, without calling any other
// Group method; so it does when kgo.NewClient fails.
//
// When ctx is done Run shuts down in this order, each step bounded (see
// Config.CloseTimeout): Group.Shutdown (the drain); the final synchronous
// commit, once the background commit in flight was answered; leaving the
// group; closing the client. It returns nil when all of them finished,
// else an error naming each step that did not. A commit the group rejects
// because it moved on (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, ...) is no
// error. A second call returns an error.
func (s *Source) Run(ctx context.Context, g pipeline.Group) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("franz: Source.Run called twice")
	}
	timeouts, err := s.cfg.groupTimeouts(s.ut, g.DrainTimeout())
	if err != nil {
		return err
	}
	r := newRunner(s, g)
	opts := []kgo.Opt{
		kgo.FetchMaxWait(defaultFetchMaxWait),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	opts = append(opts, timeouts...)
	opts = append(opts, s.cfg.Opts...)
	opts = append(opts,
		kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.ConsumerGroup(s.cfg.Group),
		kgo.ConsumeTopics(s.cfg.Topics...),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.handOff(cbAssigned, m) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.handOff(cbRevoked, m) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.handOff(cbLost, m) }),
		kgo.WithLogger(slogAdapter{s.log}),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("franz: create client: %w", err)
	}
	r.cl = cl
	return r.run(ctx)
}

// runner is the state of one Run. Apart from mu and what it guards, it is
// only touched by the poll goroutine.
type runner struct {
	s   *Source
	cl  *kgo.Client
	g   pipeline.Group
	log *slog.Logger

	owned map[pipeline.TopicPartition]bool // fence: partitions we may deliver and commit
	// ownership numbers each assignment of a partition, so that a failed
	// commit of an earlier ownership is not retried.
	ownership map[pipeline.TopicPartition]uint64
	assigns   uint64
	paused    map[pipeline.TopicPartition]bool // paused on Deliver's request
	highs     map[pipeline.TopicPartition]int64
	batch     []pipeline.Record

	collectAt time.Time
	pending   map[pipeline.TopicPartition]int64 // see commit.go
	commitDue bool
	inflight  *commitRequest

	joined  bool
	closing bool  // Shutdown (or Lose-all) done: records dropped, callbacks answered at once
	fatal   error // ends the loop

	// mu guards the hand-off from kgo's callbacks (see rebalance.go).
	mu         sync.Mutex
	queue      []*callback
	cancelPoll context.CancelFunc
	handOffEnd bool // no more hand-offs: callbacks return at once
}

func newRunner(s *Source, g pipeline.Group) *runner {
	return &runner{
		s:         s,
		g:         g,
		log:       s.log,
		owned:     make(map[pipeline.TopicPartition]bool),
		ownership: make(map[pipeline.TopicPartition]uint64),
		paused:    make(map[pipeline.TopicPartition]bool),
		highs:     make(map[pipeline.TopicPartition]int64),
		pending:   make(map[pipeline.TopicPartition]int64),
		batch:     make([]pipeline.Record, 0, maxBatch),
		collectAt: time.Now().Add(s.cfg.commitInterval()),
	}
}

func (r *runner) run(ctx context.Context) error {
	for {
		if ctx.Err() != nil {
			return r.stop()
		}
		r.serveCallbacks()
		if r.fatal != nil {
			return r.fail()
		}
		timeout := pollIdle
		if len(r.paused) > 0 {
			timeout = pollPaused
		}
		fetches := r.poll(ctx, timeout)
		r.g.Polled()
		r.handle(fetches)
		r.serveCallbacks()
		if r.fatal != nil {
			return r.fail()
		}
		r.resume()
		r.reap()
		if now := time.Now(); !now.Before(r.collectAt) {
			r.collectAt = now.Add(r.s.cfg.commitInterval())
			r.collect(r.g.Offsets())
			r.commitDue = true
		}
		r.commitPending()
	}
}

// poll polls the client for up to timeout, or until ctx is done or a
// rebalance callback hands work to the loop.
func (r *runner) poll(ctx context.Context, timeout time.Duration) kgo.Fetches {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.mu.Lock()
	r.cancelPoll = cancel
	if len(r.queue) > 0 {
		cancel()
	}
	r.mu.Unlock()
	fetches := r.cl.PollRecords(pctx, 0)
	r.mu.Lock()
	r.cancelPoll = nil
	r.mu.Unlock()
	return fetches
}

// handle delivers the records of fetches, up to maxBatch per Deliver,
// partition by partition, reports high watermarks and logs fetch errors.
func (r *runner) handle(fetches kgo.Fetches) {
	for i := range fetches {
		for j := range fetches[i].Topics {
			ft := &fetches[i].Topics[j]
			for k := range ft.Partitions {
				r.partition(ft.Topic, &ft.Partitions[k])
			}
		}
	}
}

func (r *runner) partition(topic string, fp *kgo.FetchPartition) {
	if fp.Err != nil {
		r.fetchError(topic, fp.Partition, fp.Err)
	}
	tp := pipeline.TopicPartition{Topic: topic, Partition: fp.Partition}
	if !r.owned[tp] || r.closing {
		return // fenced: not ours (stale records around a rebalance)
	}
	if fp.HighWatermark >= 0 {
		if last, ok := r.highs[tp]; !ok || last != fp.HighWatermark {
			r.highs[tp] = fp.HighWatermark
			r.g.HighWatermark(tp, fp.HighWatermark)
		}
	}
	for _, kr := range fp.Records {
		if len(r.batch) == maxBatch {
			r.flush(tp)
		}
		rec := pipeline.Record{
			Topic:     topic,
			Partition: fp.Partition,
			Offset:    kr.Offset,
			Key:       kr.Key,
			Value:     kr.Value,
			Timestamp: kr.Timestamp,
		}
		if len(kr.Headers) > 0 {
			rec.Headers = make([]pipeline.Header, len(kr.Headers))
			for i, h := range kr.Headers {
				rec.Headers[i] = pipeline.Header{Key: h.Key, Value: h.Value}
			}
		}
		r.batch = append(r.batch, rec)
	}
	r.flush(tp)
}

// flush delivers the pending batch of tp and pauses tp if asked to.
func (r *runner) flush(tp pipeline.TopicPartition) {
	if len(r.batch) == 0 {
		return
	}
	recs := slices.Clone(r.batch)
	clear(r.batch)
	r.batch = r.batch[:0]
	if r.g.Deliver(tp, recs) && !r.paused[tp] {
		r.cl.PauseFetchPartitions(map[string][]int32{tp.Topic: {tp.Partition}})
		r.paused[tp] = true
	}
}

// fetchError logs a fetch error; a closed client is fatal.
func (r *runner) fetchError(topic string, p int32, err error) {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// our own poll timeout or wake-up
	case errors.Is(err, kgo.ErrClientClosed):
		r.fatal = fmt.Errorf("franz: client closed: %w", err)
	default:
		r.log.Warn("fetch error", "topic", topic, "partition", p, "err", err)
	}
}

// resume resumes the paused partitions the group has room for again.
func (r *runner) resume() {
	if len(r.paused) == 0 {
		return
	}
	select {
	case <-r.g.Wake():
	default:
		return
	}
	m := map[string][]int32{}
	for _, tp := range r.g.Resumable() {
		if r.paused[tp] {
			delete(r.paused, tp)
			m[tp.Topic] = append(m[tp.Topic], tp.Partition)
		}
	}
	if len(m) > 0 {
		r.cl.ResumeFetchPartitions(m)
	}
}

// unpause resumes tps in kgo if we paused them: kgo keeps a partition
// paused across revoke and re-assign, and a new graph has not asked for a
// pause.
func (r *runner) unpause(tps []pipeline.TopicPartition) {
	m := map[string][]int32{}
	for _, tp := range tps {
		if r.paused[tp] {
			delete(r.paused, tp)
			m[tp.Topic] = append(m[tp.Topic], tp.Partition)
		}
	}
	if len(m) > 0 {
		r.cl.ResumeFetchPartitions(m)
	}
}

// fail loses every owned partition and closes the client after a fatal
// error.
func (r *runner) fail() error {
	tps := r.ownedList()
	clear(r.owned)
	clear(r.pending)
	if len(tps) > 0 {
		r.g.Lose(tps)
	}
	r.closing = true
	return errors.Join(r.fatal, r.leaveAndClose(time.Now()))
}

func (r *runner) ownedList() []pipeline.TopicPartition {
	tps := make([]pipeline.TopicPartition, 0, len(r.owned))
	for tp := range r.owned {
		tps = append(tps, tp)
	}
	return tps
}
