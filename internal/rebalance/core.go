package rebalance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice-go/sluice"
)

const (
	// PollIdle is the poll timeout while nothing is paused: it bounds how
	// long a cancelled ctx or a due commit interval waits for the loop.
	PollIdle = 100 * time.Millisecond
	// PollPaused is the poll timeout while some partition is paused: it
	// bounds how late a partition listed by Group.Resumable is resumed.
	PollPaused = 10 * time.Millisecond
	// MaxBatch caps the records handed to one Deliver call (an eighth of
	// the byte limit caps its bytes, see hold.go). It also bounds how far
	// the runtime's in-flight budget can be overshot: by one delivery per
	// partition, the one that paused it.
	MaxBatch = 128
)

// Options configure a [Core].
type Options struct {
	// Settings are the backend's validated Config values: Prefix
	// ("source", "franz") starts the core's error messages; CommitInterval
	// and CloseTimeout are used (zero: the defaults).
	Settings
	// Log receives the core's events. Nil discards them.
	Log *slog.Logger
	// Background counts the goroutines of client calls the core starts
	// (commits, Close); those Run stopped waiting for end when the client
	// answers. Nil: not counted.
	Background *sync.WaitGroup
}

// Core is the state of one Run of a Kafka source: the owned set,
// pending offsets, the commit in flight, the batch being built and the
// paused partitions. Create it with [New]; it is used by the poll
// goroutine only (see the package documentation).
type Core struct {
	b   Backend
	g   sluice.Group
	log *slog.Logger
	o   Options

	owned map[sluice.TopicPartition]bool // fence: partitions we may deliver and commit
	// ownership numbers each assignment of a partition (from assigns),
	// so that a failed commit of an earlier ownership is not retried.
	ownership map[sluice.TopicPartition]uint64
	assigns   uint64
	paused    map[sluice.TopicPartition]bool // paused on Deliver's request
	// held: records of paused partitions the client returned after the
	// pause, delivered when Resumable lists them (hold.go).
	held        map[sluice.TopicPartition]*heldRecs
	heldRecords int
	heldBytes   int64
	lim         limits
	avgWeight   int64 // of the records added, a moving average (Room)
	// unresumed: partitions whose Resume failed, retried every loop.
	unresumed []sluice.TopicPartition

	batchTP    sluice.TopicPartition
	batch      []sluice.Record // pending records of batchTP, not yet delivered
	batchBytes int64           // their weight
	// last: the newest record added of each owned partition since its
	// assignment or rewind (repeats.go); batchLast is batchTP's, offset
	// -1 when none.
	last      map[sluice.TopicPartition]lastAdded
	batchLast lastAdded

	collectAt time.Time // next time to collect Group.Offsets
	// pending: the newest offsets of owned partitions not sent yet, or
	// whose background commit failed (Group.Offsets reports an offset
	// once, when it moves).
	pending map[sluice.TopicPartition]int64
	// commitDue: an interval passed since the last background commit was
	// sent; inflight: the one commit sent and not handled yet, or nil.
	commitDue bool
	inflight  *commitRequest

	joined bool // Group.Joined reported
	// closing: Shutdown or LoseAll done. Records are dropped and
	// rebalances only answer the client; owned still fences the final
	// commit.
	closing bool
	// final: while Stop's final commit runs, the offsets it has not
	// committed yet, and finalBy its deadline. A revoke served meanwhile
	// commits the revoked partitions' share (revokeWhileStopping).
	final   []sluice.Offset
	finalBy time.Time
	// finalErr: what a revoke's commit of final offsets left unfinished or
	// failed (finalRevokeOutcome), returned by Stop.
	finalErr error
}

// New returns the core of one Run of b, feeding g. Call it once per Run,
// on the goroutine that then calls Run.
func New(b Backend, g sluice.Group, o Options) *Core {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Background == nil {
		o.Background = new(sync.WaitGroup)
	}
	return &Core{
		b:         b,
		g:         g,
		log:       o.Log,
		o:         o,
		owned:     make(map[sluice.TopicPartition]bool),
		ownership: make(map[sluice.TopicPartition]uint64),
		paused:    make(map[sluice.TopicPartition]bool),
		held:      make(map[sluice.TopicPartition]*heldRecs),
		last:      make(map[sluice.TopicPartition]lastAdded),
		lim:       limitsOf(g),
		pending:   make(map[sluice.TopicPartition]int64),
		batch:     make([]sluice.Record, 0, MaxBatch),
		collectAt: time.Now().Add(CommitIntervalOrDefault(o.CommitInterval)),
	}
}

// Run is the poll loop: until ctx is done it polls (Backend.Poll),
// resumes what the group has room for, handles the commit in flight's
// outcome and, every commit interval, collects and commits the processed
// offsets. Then it runs the shutdown sequence (see Stop). A fatal error
// from Poll ends it through Backend.Fail.
func (c *Core) Run(ctx context.Context) error {
	for {
		if ctx.Err() != nil {
			return c.Stop()
		}
		timeout := PollIdle
		if len(c.paused) > 0 || len(c.unresumed) > 0 {
			timeout = PollPaused
		}
		if err := c.b.Poll(ctx, timeout); err != nil {
			return c.b.Fail(err)
		}
		c.resume()
		c.reap()
		if now := time.Now(); !now.Before(c.collectAt) {
			c.collectAt = now.Add(CommitIntervalOrDefault(c.o.CommitInterval))
			c.collect(c.g.Offsets())
			c.commitDue = true
			c.b.Interval()
		}
		c.commitPending()
	}
}

// Owns reports whether tp is owned (the fence).
func (c *Core) Owns(tp sluice.TopicPartition) bool { return c.owned[tp] }

// OwnedList returns the owned partitions, in no particular order.
func (c *Core) OwnedList() []sluice.TopicPartition {
	tps := make([]sluice.TopicPartition, 0, len(c.owned))
	for tp := range c.owned {
		tps = append(tps, tp)
	}
	return tps
}

// Closing reports whether the shutdown drained (or LoseAll ran): records
// are dropped and rebalances only answer the client.
func (c *Core) Closing() bool { return c.closing }

// Add appends rec, a record the client returned, to the batch being
// built, delivering the batch first when rec is of another partition or
// the batch is full (MaxBatch records, or rec would take it past an
// eighth of the byte limit). Records of partitions not owned, and every
// record once closing, are dropped. The owned set is looked up once per
// batch, at its first record: a partition given up while its batch is
// built (nothing does that between two Adds of one poll) is still fenced
// by Flush.
func (c *Core) Add(rec sluice.Record) {
	if c.closing {
		return // fenced: the shutdown drained
	}
	tp := sluice.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}
	w := Weight(&rec)
	if len(c.batch) == 0 || tp != c.batchTP {
		if !c.owned[tp] {
			return // fenced: not ours (stale record around a rebalance)
		}
		c.Flush()
		c.batchTP = tp
		c.batchLast = c.lastOf(tp)
	} else if len(c.batch) == MaxBatch || c.batchBytes+w > c.lim.batchBytes {
		c.Flush()
		c.batchLast = c.lastOf(tp) // a rewind during the delivery forgot it
	}
	if c.batchLast.repeatedBy(&rec) {
		c.repeated(tp, rec.Offset)
		return
	}
	c.batchLast = lastAdded{offset: rec.Offset, timestamp: rec.Timestamp}
	c.batch = append(c.batch, rec)
	c.batchBytes += w
}

// Flush delivers the batch being built and pauses its partition if
// Deliver asks to; the batch of a partition the core paused is held
// instead (hold.go). Backends call it when the records polled so far are
// done with, and before anything that must see them delivered (a revoke).
//
// A pause is not free on librdkafka (v2.11.1, src/rdkafka_partition.c,
// rd_kafka_toppar_pause_resume): it sets the partition's next fetch
// position to the application's position (the record after the last one
// polled), bumps the partition's op version and purges its fetch queue
// (rd_kafka_q_purge_toppar_version), so every prefetched record of it is
// thrown away. Resume bumps the version again and fetches from that
// position (src/rdkafka_fetcher.c, rd_kafka_toppar_fetch_decide): no
// record is lost or repeated, no seek is needed, but the records are
// fetched again and arrive behind what other partitions prefetched, or
// after the fetch long poll in flight (fetch.wait.max.ms). Hence the
// runtime's partition queue holds more than a graph's edges do, and its
// resume waits for a low watermark (engine.resumableLocked).
func (c *Core) Flush() {
	if len(c.batch) == 0 {
		return
	}
	tp, recs := c.batchTP, c.batch
	c.last[tp] = c.batchLast // before Deliver: a rewind inside it forgets it (DropHeld)
	c.weighed(len(recs), c.batchBytes)
	// The batch's array is handed to Deliver and reused for the next
	// batch: every Group copies what it keeps (the runtime's tracker
	// copies each record into its slots, and the groups that hold records
	// back append them to arrays of their own: exactlyonce, follow).
	pause := false
	switch {
	case !c.owned[tp]:
	case c.paused[tp]:
		c.hold(tp, recs) // the rest of the poll that paused tp
	default:
		pause = c.g.Deliver(tp, recs)
	}
	clear(recs) // the client's buffers are not kept alive by the batch
	c.batch, c.batchBytes = recs[:0], 0
	if pause && !c.paused[tp] {
		if err := c.b.Pause(tp); err != nil {
			c.log.Warn("pause failed", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			return
		}
		c.paused[tp] = true
	}
}

// resume resumes the paused partitions the group has room for again,
// once what the core held of them is delivered, and retries resumes that
// failed before.
func (c *Core) resume() {
	var tps []sluice.TopicPartition
	for _, tp := range c.unresumed {
		if c.owned[tp] {
			tps = append(tps, tp)
		}
	}
	c.unresumed = nil
	if len(c.paused) > 0 {
		select {
		case <-c.g.Wake():
			for _, tp := range c.g.Resumable() {
				// deliverHeld may pause tp again: the runtime lists it
				// once it has room, and the rest is delivered then.
				if c.paused[tp] && c.owned[tp] && c.deliverHeld(tp) {
					tps = append(tps, tp)
					delete(c.paused, tp)
				}
			}
		default:
		}
	}
	if len(tps) == 0 {
		return
	}
	if err := c.b.Resume(tps); err != nil {
		c.log.Warn("resume failed; retrying", "partitions", tps, "err", err)
		c.unresumed = tps
	}
}

func (c *Core) commitTimeout() time.Duration { return CommitTimeout(c.o.CloseTimeout) }

func (c *Core) closeTimeout() time.Duration { return CloseTimeoutOrDefault(c.o.CloseTimeout) }
