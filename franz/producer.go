package franz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/internal/produce"
	"github.com/sluice-go/sluice/pipeline/stagekit"
)

// ErrClosed is wrapped by the errors of produce calls made after (or
// outstanding when) [Producer.Close] closed the producer.
var ErrClosed = produce.NewErrClosed("franz")

// Producer is a kgo (franz-go) producer, a sink.Producer: pass it to
// sink.Produce, and its DeadLetter to pipeline.WithDeadLetter. One
// Producer is shared by the Produce stages of every partition and by the
// dead-letter destination ([Producer.DeadLetter]). It is safe for
// concurrent use. Create it before pipeline.Run and close it after Run
// returned.
type Producer struct {
	// core makes Producer a sink.Producer: sink.Produce and DeadLetter
	// send through it (client below).
	*core

	cl           *kgo.Client
	logger       *slog.Logger
	closeTimeout time.Duration
	delivery     time.Duration // ProducerConfig.DeliveryTimeout or its default
	deadlines    deadlines     // the records' produce contexts (producer_deadline.go)
	// tr is what the receivers (Produce stages, dead letters) and Close
	// share: pending reports, the messages given up on; its Gone is
	// closed once kgo's Close returned (no promise runs after).
	tr *produce.Tracker
	// topics checks the topics written to (the dead-letter topic at Run's
	// start, a Produce stage's at its first build); see topicsClient.
	topics *produce.Topics
	// probe are the options of a client for those checks when cl is not
	// there yet (a transactional producer before its source's Run).
	probe []kgo.Opt
	// giveUp is the context of every kgo.Produce call; Close cancels it
	// when it gives up on what is left (kgo fails a buffered record whose
	// produce context ended, and a Produce waiting for buffer room).
	giveUp       context.Context
	cancelGiveUp context.CancelFunc
	// maxRecords and maxBytes are kgo.MaxBufferedRecords and
	// kgo.MaxBufferedBytes (0: no limit).
	maxRecords, maxBytes int64
	// buffered counts the records (and their bytes, as kgo counts them)
	// SendChunk reserved room for (reserveRoom) whose promise has not run
	// yet: what kgo buffers, or is about to be handed, read without kgo's
	// producer lock (full).
	buffered bufferedCount
	// reserve serialises the receivers' reservations of room in kgo's
	// buffer (SendChunk: reading buffered, finding what fits, counting it
	// in): two receivers that read the same count would each take the
	// room left, and one would wait in kgo's Produce for deliveries. The
	// promise only ever frees room, without it (it takes it only to
	// wake the dead letters waiting, see first).
	reserve sync.Mutex
	// first is the line of dead letters waiting for room, which the
	// stages' reservations leave room for (producer_first.go).
	first firstRoom
	// handing counts the SendChunk calls that reserved room and are still
	// handing their records to kgo; handed is closed when it drops to
	// zero while Close waits for it (handedOver). Both under reserve.
	handing int
	handed  chan struct{}
	// awaitingHandOver, nil but in tests, is called when Close starts
	// waiting in handedOver for calls still handing records over.
	awaitingHandOver func()
	// promise is reported's method value, made once: the promise of
	// every record (producer_record.go).
	promise func(*kgo.Record, error)
	// txn is set for a transactional producer (NewTransactionalProducer,
	// transaction.go): cl is then the source's, set when its Run starts.
	txn *txnState
}

// NewProducer validates cfg, refuses the kgo options the producer relies
// on (an error naming the option and why), and creates the client; kgo
// connects on the first produce. Call it once, before pipeline.Run (one
// created inside a builder fails the build), share the result between
// every graph and the dead-letter destination, and Close it after Run
// returned.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts, err := producerOpts(cfg, logger)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("franz: creating the producer: %w", err)
	}
	p := newProducerFor(cfg, logger)
	p.setClient(cl)
	return p, nil
}

// newProducerFor returns the producer of cfg without its client:
// setClient gives it one, before anything is produced.
func newProducerFor(cfg ProducerConfig, logger *slog.Logger) *Producer {
	giveUp, cancel := context.WithCancel(context.Background())
	p := &Producer{
		giveUp:       giveUp,
		cancelGiveUp: cancel,
		logger:       logger,
		closeTimeout: cfg.CloseTimeout,
		delivery:     cfg.DeliveryTimeout,
		tr:           produce.NewTracker(produce.Names{Package: "franz", ErrClosed: ErrClosed}),
	}
	p.promise = p.reported
	p.core = produce.NewCore(client{p}, p.tr)
	p.probe = append(slices.Clone(cfg.Opts), kgo.SeedBrokers(cfg.Brokers...))
	p.topics = produce.NewTopics(p.tr.Names(), cfg.SkipTopicCheck, "ProducerConfig.SkipTopicCheck", p.describeTopics, logger)
	if p.closeTimeout == 0 {
		p.closeTimeout = DefaultProducerCloseTimeout
	}
	if p.delivery == 0 {
		p.delivery = DefaultDeliveryTimeout
	}
	return p
}

// setClient gives p its kgo client and reads its buffer limits.
func (p *Producer) setClient(cl *kgo.Client) {
	p.cl = cl
	p.maxRecords, _ = cl.OptValue(kgo.MaxBufferedRecords).(int64)
	p.maxBytes, _ = cl.OptValue(kgo.MaxBufferedBytes).(int64)
}

// core is the embedded produce core, under a name that keeps it out of
// Producer's exported API.
type core = produce.Core

// client is the kgo side of the produce core: a delivery report is the
// record's *outRecord, which kgo's promise sends to the receiver's channel
// and client.Report reads.
type client struct{ p *Producer }

// errBufferFull is Send's error while kgo buffers as many records (or
// bytes) as it may: the core waits for a report and sends again.
var errBufferFull = errors.New("franz: kgo's produce buffer is full")

// Send hands o to kgo as SendChunk does a chunk of one (a copy of o, on
// the stack: SendChunk keeps no reference to its chunk), except that it
// waits for room while kgo's buffer is full, ahead of the Produce stages:
// Send is the dead letters' path (a Produce stage hands its messages to
// SendChunk), see producer_first.go.
func (c client) Send(ctx context.Context, o *produce.Outgoing, reports chan produce.Event) error {
	if err := c.p.usable(); err != nil {
		return err
	}
	chunk := [1]produce.Outgoing{*o}
	return c.p.sendFirst(ctx, chunk[:], reports)
}

// SendChunk hands kgo the messages of os that fit in its buffer, in
// order, and returns how many; errBufferFull when the next would make kgo
// buffer more than kgo.MaxBufferedRecords records (or
// kgo.MaxBufferedBytes bytes): kgo's Produce would block there, deaf to
// the partition's end, and ctx is not passed to kgo, which would fail
// buffered records once it ends. Every record is produced under a
// context ending at its delivery timeout or when Close gives up: a
// record once buffered is delivered or fails then, never because a
// partition ended, so its report always comes. The records sent within
// a few milliseconds share that context (see deadlines); the records of
// one call share the closed check, the clock read and the updates of
// the counters every stage shares. kgo calls promises one at a time
// from one goroutine: the receiver keeps room for the reports (the
// core's outstanding bound), so a promise never blocks.
func (c client) SendChunk(_ context.Context, os []produce.Outgoing, reports chan produce.Event) (int, error) {
	if err := c.p.usable(); err != nil {
		return 0, err
	}
	n, err := c.p.reserveRoom(os)
	if n == 0 {
		return 0, err
	}
	c.p.handOver(os[:n], reports)
	return n, err
}

// reserveRoom is SendChunk's first half: it counts as buffered (and
// pending: Tracker.Admit) the messages of os that fit in kgo's buffer, a
// prefix of os, and returns how many; with none, the error saying why (ErrClosed,
// errBufferFull). Under p.reserve, so that what the receivers reserve
// together never exceeds the buffer: kgo's Produce then waits for room
// only the moment kgo's own count lags behind the promise (see full).
// Admitted without a lock held across Produce, which Close must not wait
// for beyond its timeout; the call counts in p.handing until it handed
// its records over (handOver).
func (p *Producer) reserveRoom(os []produce.Outgoing) (int, error) {
	p.reserve.Lock()
	defer p.reserve.Unlock()
	records, bytes := p.buffered.load()
	// Room is left for the dead letters waiting (producer_first.go).
	records, bytes = records+int64(len(p.first.line)), bytes+p.first.bytes
	n, size := 0, int64(0)
	for n < len(os) {
		s := messageSize(&os[n].Message)
		if p.full(records+int64(n), bytes+size, s) {
			break
		}
		size += s
		n++
	}
	if n == 0 {
		if p.tr.Closing() {
			return 0, p.tr.Names().ErrClosed
		}
		return 0, errBufferFull
	}
	if err := p.tr.Admit(n); err != nil {
		return 0, err
	}
	p.buffered.add(int64(n), size)
	p.handing++
	if n < len(os) {
		return n, errBufferFull
	}
	return n, nil
}

// handOver is SendChunk's second half: it hands kgo the messages of os,
// for which reserveRoom reserved room, their reports to go to reports, and then says it did (handOverDone). It
// holds no lock: Close waits for it within its timeout only
// (handedOver).
func (p *Producer) handOver(os []produce.Outgoing, reports chan produce.Event) {
	defer p.handOverDone()
	now := time.Now()
	ctx := p.deadlines.context(p.giveUp, p.delivery, now)
	for i := range os {
		or := newOutRecord(&os[i], reports)
		stamp(&or.rec, now)
		or.rec.Context = ctx
		p.cl.Produce(ctx, &or.rec, p.promise)
	}
}

// handOverDone says a SendChunk call that reserved room handed its
// records to kgo.
func (p *Producer) handOverDone() {
	p.reserve.Lock()
	defer p.reserve.Unlock()
	p.handing--
	if p.handing == 0 && p.handed != nil {
		close(p.handed)
		p.handed = nil
	}
}

// handedOver waits, until ctx ends, for the SendChunk calls that
// reserved room to hand their records to kgo: Close calls it once no
// call can reserve any more (Tracker.Close stops Admit first), so that
// kgo's Flush, and Close's count of what it gives up on, include every
// record admitted before Close started. It reports whether they did.
func (p *Producer) handedOver(ctx context.Context) bool {
	p.reserve.Lock()
	if p.handing == 0 {
		p.reserve.Unlock()
		return true
	}
	if p.handed == nil {
		p.handed = make(chan struct{})
	}
	handed := p.handed
	p.reserve.Unlock()
	if p.awaitingHandOver != nil {
		p.awaitingHandOver()
	}
	select {
	case <-handed:
		return true
	case <-ctx.Done():
		return false
	}
}

// full reports whether a record of size bytes would make kgo's Produce
// wait for room while records records of bytes bytes are buffered. A
// record larger than kgo.MaxBufferedBytes never fits: kgo fails it at
// once (MESSAGE_TOO_LARGE) before it looks at its buffer, so it is not
// full's to wait, whatever is buffered. The counts are
// those of the records SendChunk reserved and the promise did not report
// yet (p.buffered): kgo's count of the same records
// (BufferedProduceRecords, BufferedProduceBytes, each a lock of kgo's
// producer shared with its promise goroutine) drops just after the
// promise returned, so Produce may wait that moment for room. The
// producer's client produces nothing but SendChunk's records (a transactional
// producer's is the source's, which produces nothing).
func (p *Producer) full(records, bytes, size int64) bool {
	if p.maxBytes > 0 && size > p.maxBytes {
		return false // kgo fails it before it counts its buffer
	}
	if p.maxRecords > 0 && records >= p.maxRecords {
		return true
	}
	return p.maxBytes > 0 && bytes+size > p.maxBytes
}

// QueueFull: kgo's buffer is full (errBufferFull).
func (client) QueueFull(err error) bool { return err == errBufferFull }

// Report reads a delivery report, the record's *outRecord (see
// Producer.reported).
func (client) Report(ev produce.Event) (stagekit.Ticket, error, bool) {
	or := ev.(*outRecord)
	return or.t, or.err, true
}

// GaveUp: Close aborts what is left (kgo.ErrAborting, or
// context.Canceled: the give-up context); what kgo's own close fails
// (kgo.ErrClientClosed) is given up on too. Only once Close started: a
// transactional producer's abort (kgoTxn.Abort) fails the records it
// buffers with kgo.ErrAborting too, and their inputs are processed
// again, not undelivered.
func (c client) GaveUp(err error) bool {
	return c.p.tr.Closing() && (errors.Is(err, kgo.ErrAborting) || errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled))
}

func (client) Classify(err error) error { return classify(err) }

// MaxBuffered is kgo.MaxBufferedRecords, or 0 (no known bound) while a
// transactional producer has no client yet. It reads maxRecords only
// after seeing the client attached, as usable does: a Produce stage may
// start (in another source's Run) while the source's Run attaches it.
func (c client) MaxBuffered() int {
	if c.p.txn != nil && !c.p.txn.attached.Load() {
		return 0
	}
	return int(c.p.maxRecords)
}

// Topics returns the producer's topic checks (produce.TopicChecker).
func (c client) Topics() *produce.Topics { return c.p.topics }

// describeTopics looks names up for the topic checks with the producer's
// client, or, while a transactional producer has none yet, with a client
// of its own made for it.
func (p *Producer) describeTopics(ctx context.Context, names []string) (map[string]error, error) {
	if p.txn == nil || p.txn.attached.Load() {
		return describeWith(p.cl)(ctx, names)
	}
	cl, err := kgo.NewClient(p.probe...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return describeWith(cl)(ctx, names)
}
