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

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/exactlyonce"
	"github.com/sluice-go/sluice/internal/headers"
	"github.com/sluice-go/sluice/internal/rebalance"
)

const (
	// pollIdle and maxBatch are the core's poll timeout while nothing is
	// paused and its cap on the records of one Deliver call; the share
	// source uses them too.
	pollIdle = rebalance.PollIdle
	maxBatch = rebalance.MaxBatch
	// defaultFetchMaxWait replaces kgo's 5s: a resumed partition otherwise
	// waits behind a long-poll fetch of caught-up partitions.
	defaultFetchMaxWait = 100 * time.Millisecond
	// saturatedPollMax is the longest the poll loop takes nothing from
	// kgo while the runtime stays saturated; then it polls once as when
	// not saturated (see runner.poll).
	saturatedPollMax = time.Second
)

// Source is a [sluice.Source] consuming a Kafka consumer group through
// franz-go (kgo). Create it with [NewSource]; its Run may be called once.
type Source struct {
	cfg     Config
	ut      userTimeouts // group timeouts set in Config.Opts
	log     *slog.Logger
	started atomic.Bool
	// background counts the goroutines of client calls (commits, Close,
	// the purges of deleted topics: group_purge.go);
	// those Run stopped waiting for (past their bound) end when kgo
	// answers or gives up. Tests wait for them.
	background sync.WaitGroup
	// polled, when set (tests), is called on the poll goroutine after
	// every poll with the records the core holds and those kgo buffered.
	polled func(h held)
	// txn holds the transactional producer NewTransactionalProducer bound
	// to the source; Run takes it.
	txn exactlyonce.Slot[*Producer]
}

// held is what the source holds outside the runtime after a poll: the
// records its core keeps for paused partitions and those kgo buffered,
// with their weight (rebalance.Weight; kgo's bytes are its keys, values
// and headers, without the overhead).
type held struct {
	core, kgo           int
	coreBytes, kgoBytes int64
}

var _ sluice.Source = (*Source)(nil)

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
	return &Source{cfg: cfg, ut: ut, log: rebalance.SourceLogger(cfg.Logger, "sluice/franz", cfg.Group)}, nil
}

// Run joins the group, consumes Config.Topics and feeds the records to g
// until ctx is done; see [sluice.Source] for the contract. Every call to
// g happens on the calling goroutine: kgo's rebalance callbacks hand their
// work to it and wait (see the package documentation, "Rebalances").
//
// Before anything else Run derives the group timeouts from
// g.DrainTimeout() and returns an error naming kgo.RebalanceTimeout if
// Config.Opts set one too small for a revoke, without calling any other
// Group method; so it does when kgo.NewClient fails, and for a topic of
// Config.Topics that does not exist (checked before joining, unless
// Config.SkipTopicCheck; the error wraps sluice.ErrMissingTopic).
//
// With a transactional producer bound (NewTransactionalProducer), Run
// initializes its producer id before the poll loop, within
// TransactionalConfig.CommitTimeout. kgo joins the group as soon as the
// client exists, so the assignment may come first: it waits for the
// loop. If the id cannot be had in time (kgo retries retriable answers
// such as COORDINATOR_LOAD_IN_PROGRESS until then), Run answers kgo
// without assigning anything, leaves the group, closes the client
// (bounded as below) and returns an error naming the transactional id
// and the broker's last answer. If ctx is done first, Run shuts down as
// below, with nothing to commit.
//
// When ctx is done Run shuts down in this order, each step bounded (see
// Config.CloseTimeout): Group.Shutdown (the drain); the final synchronous
// commit, once the background commit in flight was answered; leaving the
// group; closing the client. It returns nil when all of them finished,
// else an error naming each step that did not. A commit the group rejects
// because it moved on (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, ..., also a
// REBALANCE_IN_PROGRESS still answered when the final commit's time is up)
// is no error, only a warning: no record is lost, the next owner processes
// the records after the previous commit again. A second call returns an error.
func (s *Source) Run(ctx context.Context, g sluice.Group) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("franz: Source.Run called twice")
	}
	// Exactly-once (transaction_source.go): nil without a transactional
	// producer; from here on no producer can bind to s.
	txns := s.takeTransactions()
	if err := s.cfg.settings().CheckExactlyOnce(txns != nil); err != nil {
		return err
	}
	timeouts, err := s.cfg.groupTimeouts(s.ut, g.DrainTimeout())
	if err != nil {
		return err
	}
	if !s.cfg.SkipTopicCheck {
		opts := probeOpts(s.cfg.Opts, s.cfg.Brokers, kgo.ConsumerGroup(s.cfg.Group))
		if err := checkInputTopics(ctx, s.log, "Config.Topics", "Config.SkipTopicCheck", s.cfg.Topics, opts); err != nil {
			return err
		}
	}
	r := newRunner(s, txns.wrap(ctx, g))
	r.txns = txns
	txns.attach(r.core, &r.gone, &r.ids, &r.coord)
	opts := []kgo.Opt{
		kgo.FetchMaxWait(defaultFetchMaxWait),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	sizer := newFetchSizer(budgetOf(g), recordsOf(g)) // fetch.go
	opts = append(opts, sizer.opts()...)
	opts = append(opts, kgo.WithPools(new(recordPool))) // record_pool.go
	opts = append(opts, txns.defaultOpts()...)
	opts = append(opts, timeouts...)
	opts = append(opts, s.cfg.Opts...)
	opts = append(opts, txns.opts()...)
	opts = append(opts,
		kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.ConsumerGroup(s.cfg.Group),
		kgo.ConsumeTopics(s.cfg.Topics...),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.handOff(cbAssigned, m) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.handOff(cbRevoked, m) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.handOff(cbLost, m) }),
		kgo.AdjustFetchOffsetsFn(r.adjustOffsets),
		kgo.WithLogger(slogAdapter{log: s.log, init: txns.initWatch()}),
		kgo.WithHooks(&r.coord),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("franz: create client: %w", err)
	}
	r.cl = cl
	sizer.start(cl)
	if err := txns.start(ctx, cl); err != nil && ctx.Err() == nil {
		// kgo may have joined the group already, its OnPartitionsAssigned
		// waiting for the poll loop: Fail answers it (nothing is owned,
		// no graph started) while it leaves and closes, bounded.
		return r.Fail(err)
	}
	// Once ctx is done the loop shuts down at once, answering kgo's
	// callbacks as it does.
	return txns.group().JoinErr(r.core.Run(ctx))
}

// runner is the state of one Run and the [rebalance.Backend] of its
// core. Apart from mu and what it guards, it is only touched by the poll
// goroutine (Commit reads only fields set before the loop started).
type runner struct {
	s    *Source
	cl   *kgo.Client
	g    sluice.Group
	log  *slog.Logger
	core *rebalance.Core // owned set, batch, pause/resume, commits
	txns *transactions   // exactly-once; nil without a transactional producer
	hdrs headers.Slab    // header slices of converted records (toRecord)

	highs map[sluice.TopicPartition]int64 // last high watermark reported
	fatal error                           // ends the loop
	gone  goneTopics                      // see topicsGone
	// purges: the topics being consumed anew, each with the channel its
	// purge from the client closes when done (group_purge.go).
	purges map[string]chan struct{}
	// leaving: Leave started; a purge that ends later does not add its
	// topic back (group_purge.go). Read off the poll goroutine.
	leaving atomic.Bool
	// ids: the topic IDs the records were fetched under, which Commit
	// checks (topic_ids.go).
	ids fetchedIDs
	// coord: the group's coordinator, where Commit sends its check of the
	// topic IDs (topic_ids.go); a hook of the client.
	coord groupCoordinator

	// mu guards the hand-off from kgo's callbacks (see rebalance.go).
	mu         sync.Mutex
	queue      []*callback
	cancelPoll context.CancelFunc
	handOffEnd bool // no more hand-offs: callbacks return at once
	// replaced: topics a commit found deleted or recreated, for the poll
	// loop to mark gone (markReplaced).
	replaced []string
	// starts: offsets the offset store claimed, for adjustOffsets
	// (start_offsets.go).
	starts map[sluice.TopicPartition]int64
	// pausing: partitions the core paused whose pause in kgo waits for
	// the end of the poll's handling (pause.go).
	pausing []sluice.TopicPartition
	// saturatedSince: since when every poll found the runtime saturated
	// (zero when the last did not); see poll.
	saturatedSince time.Time
}

var _ rebalance.Backend = (*runner)(nil)

func newRunner(s *Source, g sluice.Group) *runner {
	r := &runner{
		s:     s,
		g:     g,
		log:   s.log,
		highs: make(map[sluice.TopicPartition]int64),
	}
	r.core = rebalance.New(r, g, rebalance.Options{
		Settings:   s.cfg.settings(),
		Log:        s.log,
		Background: &s.background,
	})
	return r
}

// Poll serves the rebalance callbacks kgo handed over, polls the client
// for up to timeout (or until a callback wakes it), delivers the records
// and serves the callbacks that came meanwhile.
func (r *runner) Poll(ctx context.Context, timeout time.Duration) error {
	r.serveCallbacks()
	if r.fatal != nil {
		return r.fatal
	}
	fetches := r.poll(ctx, timeout)
	r.g.Polled()
	r.handle(fetches)
	r.takeReplaced()
	r.topicsGone()
	r.pausePending()
	if r.s.polled != nil {
		n, b := r.core.Held()
		r.s.polled(held{core: n, coreBytes: b, kgo: int(r.cl.BufferedFetchRecords()), kgoBytes: r.cl.BufferedFetchBytes()})
	}
	r.serveCallbacks()
	if r.fatal == nil {
		return r.txns.group().Err() // an aborted transaction stops Run like a fatal error
	}
	return r.fatal
}

// holdBack reports whether this poll takes no record from kgo because
// the runtime is saturated. After saturatedPollMax of unbroken saturation
// it answers false once: a graph holds the budget, and what kgo keeps
// buffered (a paused partition's records) may stand in front of a fetch
// error that would free it (a deleted topic's partitions are lost).
func (r *runner) holdBack() bool {
	if !saturated(r.g) {
		r.saturatedSince = time.Time{}
		return false
	}
	now := time.Now()
	if r.saturatedSince.IsZero() {
		r.saturatedSince = now
	}
	if now.Sub(r.saturatedSince) >= saturatedPollMax {
		r.saturatedSince = now
		return false
	}
	return true
}

// poll polls the client for up to timeout, or until ctx is done or a
// rebalance callback hands work to the loop, taking at most the records
// the core has room for (Core.Room). While the core has none, or the
// runtime's budget is full (saturated), it takes nothing and only waits
// as long (while saturated, at most rebalance.PollPaused: a completion
// may make room at any moment): kgo keeps what it fetched (it fetches no
// more from a broker until its buffered fetch was taken), and the held
// records are delivered as the runtime resumes their partitions. While
// saturated it still takes what kgo buffered when that holds no record:
// fetch errors, such as a deleted topic's, are handed over only by a poll.
// Once saturated for saturatedPollMax it polls as when not saturated,
// once: a buffered fetch holding only records of paused partitions would
// otherwise keep such an error from ever being fetched.
func (r *runner) poll(ctx context.Context, timeout time.Duration) kgo.Fetches {
	full := r.holdBack()
	if full {
		timeout = min(timeout, rebalance.PollPaused)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.mu.Lock()
	r.cancelPoll = cancel
	if len(r.queue) > 0 || len(r.replaced) > 0 {
		cancel()
	}
	r.mu.Unlock()
	var fetches kgo.Fetches
	switch room := r.core.Room(); {
	case room > 0 && !full:
		r.txns.polled()
		fetches = r.cl.PollRecords(pctx, room)
	case room > 0 && r.cl.BufferedFetchRecords() == 0:
		// Saturated, and kgo holds no record: take what it buffered
		// without waiting, its fetch errors (a deleted topic is seen
		// only so, and losing its partitions may be what frees the
		// budget). A record buffered since the check is delivered as
		// any other.
		r.txns.polled()
		//lint:ignore SA1012 a nil context takes what is buffered, without waiting
		fetches = r.cl.PollRecords(nil, room)
		<-pctx.Done()
	default:
		<-pctx.Done()
	}
	r.mu.Lock()
	r.cancelPoll = nil
	r.mu.Unlock()
	return fetches
}

// handle delivers the records of fetches, up to rebalance.MaxBatch per
// Deliver, partition by partition, reports high watermarks and logs fetch
// errors.
func (r *runner) handle(fetches kgo.Fetches) {
	for i := range fetches {
		for j := range fetches[i].Topics {
			ft := &fetches[i].Topics[j]
			r.ids.saw(ft.Topic, ft.TopicID)
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
	tp := sluice.TopicPartition{Topic: topic, Partition: fp.Partition}
	defer recycle(fp.Records) // converted or dropped: their slices go back to the pool
	if !r.core.Owns(tp) || r.core.Closing() {
		return // fenced: not ours (stale records around a rebalance)
	}
	if fp.HighWatermark >= 0 {
		if last, ok := r.highs[tp]; !ok || last != fp.HighWatermark {
			r.highs[tp] = fp.HighWatermark
			r.g.HighWatermark(tp, fp.HighWatermark)
		}
	}
	for _, kr := range fp.Records {
		if r.txns.dropRewound(tp) {
			break // rewound by an aborted transaction: these predate the seek
		}
		r.core.Add(toRecord(kr, &r.hdrs))
	}
	r.core.Flush()
}

// recycle hands recs back to kgo (kgo.Record.Recycle): their slice goes
// back to the source's recordPool once every record of its batch was
// recycled. Nothing may read them after.
func recycle(recs []*kgo.Record) {
	for _, kr := range recs {
		kr.Recycle()
	}
}

// toRecord converts a record kgo returned into a record, its headers
// carved out of hdrs (no allocation per record).
func toRecord(kr *kgo.Record, hdrs *headers.Slab) sluice.Record {
	return sluice.Record{
		Topic:     kr.Topic,
		Partition: kr.Partition,
		Offset:    kr.Offset,
		Key:       kr.Key,
		Value:     kr.Value,
		Timestamp: kr.Timestamp,
		Headers:   headers.Convert(hdrs, kr.Headers),
	}
}

// fetchError logs a fetch error; a closed client is fatal.
// UNKNOWN_TOPIC_ID marks the topic gone (see topicsGone): kgo reports it
// only once it persists, the topic having been deleted.
func (r *runner) fetchError(topic string, p int32, err error) {
	if r.gone.mark(topic, err) {
		return
	}
	if fatal := fetchErrorFatal(r.log, "client", topic, p, err); fatal != nil {
		r.fatal = fatal
	}
}

// topicsGone starts consuming anew each topic the broker no longer knows
// by the ID the client holds: the topic was deleted, and maybe recreated
// under the same name with a new ID, which kgo never adopts by itself (it
// fails the topic's partitions with UNKNOWN_TOPIC_ID, fetch after fetch,
// until the topic is purged from the client and added back). The owned
// partitions of the topic are lost: their graphs are cancelled and
// nothing of theirs is committed (their offsets are the old topic's, and
// would skip records of the new one). The topic is then purged from the
// client (which rebalances) and added back, so that the group assigns the
// partitions of the recreated topic anew and they are consumed from the
// group's committed offset or, without one, Config's start offset. The
// purge runs on a goroutine of its own (consumeAnew): the poll loop goes
// on meanwhile. A topic reported again while its purge runs loses the
// partitions owned of it again (a rebalance may have assigned some
// meanwhile) and is not purged a second time: the purge running adds the
// topic back under the ID the broker knows then.
func (r *runner) topicsGone() {
	if len(r.gone) == 0 {
		return
	}
	for topic, ok := r.gone.next(); ok; topic, ok = r.gone.next() {
		var tps []sluice.TopicPartition
		for _, tp := range r.core.OwnedList() {
			if tp.Topic == topic {
				tps = append(tps, tp)
				delete(r.highs, tp)
			}
		}
		r.core.Lost(tps) // may mark more topics gone (an aborted transaction's rewind)
		if r.purging(topic) {
			r.log.Debug(goneAgain, "topic", topic, "partitions_lost", len(tps))
			continue
		}
		r.log.Warn("the broker no longer knows the topic's ID: it was deleted (and maybe recreated); its partitions are lost, and it is consumed anew under its current ID",
			"topic", topic, "partitions_lost", len(tps))
		r.consumeAnew(topic)
	}
}

// Fail loses every owned partition and closes the client after a fatal
// error.
func (r *runner) Fail(err error) error {
	r.core.LoseAll()
	return errors.Join(err, r.core.LeaveAndClose(time.Now()))
}

// Interval does nothing: kgo's fetches carry the high watermarks.
func (r *runner) Interval() {}
