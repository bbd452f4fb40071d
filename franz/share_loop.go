package franz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// heldKey names one record held by the share source.
type heldKey struct {
	tp     sluice.TopicPartition
	offset int64
}

// heldRecord is a record polled and not acknowledged yet, with what its
// lock renewal needs: when its lock (last) started and how long it lasts
// (estimated from kgo's AcquisitionDeadline; zero when unknown).
type heldRecord struct {
	rec   *kgo.Record
	since time.Time
	lock  time.Duration
}

// shareRunner is the state of one ShareSource.Run; poll goroutine only
// (but ackResults, kgo's callback).
type shareRunner struct {
	s   *ShareSource
	cl  *kgo.Client
	g   sluice.AckGroup
	log *slog.Logger

	assigned map[sluice.TopicPartition]bool // partitions with a graph
	held     map[heldKey]*heldRecord
	batch    []sluice.Record
	acks     []sluice.Ack
	joined   bool
	fatal    error
	gone     goneTopics   // see topicsGone
	anew     consumedAnew // the topics topicsGone consumed anew lately
}

func newShareRunner(s *ShareSource, g sluice.AckGroup) *shareRunner {
	return &shareRunner{
		s:        s,
		g:        g,
		log:      s.log,
		assigned: make(map[sluice.TopicPartition]bool),
		held:     make(map[heldKey]*heldRecord),
		batch:    make([]sluice.Record, 0, maxBatch),
	}
}

// run polls a batch when nothing is held, else waits for outcomes (Wake)
// or the next renewal tick, until ctx is done or the client fails.
func (r *shareRunner) run(ctx context.Context) error {
	tick := time.NewTicker(pollIdle)
	defer tick.Stop()
	for {
		if ctx.Err() != nil {
			return r.stop()
		}
		if len(r.held) == 0 {
			r.handle(r.poll(ctx))
			if r.topicsGone(ctx) {
				// kgo buffers a fetch's error at once: a topic deleted
				// again within its grace must not be fetched (and
				// ignored) at round-trip pace until the grace ends.
				select {
				case <-tick.C:
				case <-ctx.Done():
				}
			}
			if !r.joined {
				r.joined = true
				r.g.Joined()
			}
		} else {
			select {
			case <-r.g.Wake():
			case <-tick.C:
			case <-ctx.Done():
			}
		}
		// The loop is alive (kgo heartbeats in the background): the
		// health check's "still polls" means that here.
		r.g.Polled()
		if r.fatal != nil {
			return r.fail()
		}
		r.applyAcks()
		r.g.Resumable() // nothing to resume in kgo: the runtime queues what it paused
		r.renew(time.Now())
	}
}

// poll polls the client for up to pollIdle, or until ctx is done.
func (r *shareRunner) poll(ctx context.Context) kgo.Fetches {
	pctx, cancel := context.WithTimeout(ctx, pollIdle)
	defer cancel()
	r.anew.polling(time.Now())
	return r.cl.PollRecords(pctx, 0)
}

// handle delivers (or dead-letters) every record of fetches and holds it
// until its outcome.
func (r *shareRunner) handle(fetches kgo.Fetches) {
	now := time.Now()
	for i := range fetches {
		for j := range fetches[i].Topics {
			ft := &fetches[i].Topics[j]
			for k := range ft.Partitions {
				r.partition(ft.Topic, &ft.Partitions[k], now)
			}
		}
	}
}

func (r *shareRunner) partition(topic string, fp *kgo.FetchPartition, now time.Time) {
	if fp.Err != nil {
		r.fetchError(topic, fp.Partition, fp.Err)
	}
	if len(fp.Records) == 0 {
		return
	}
	tp := sluice.TopicPartition{Topic: topic, Partition: fp.Partition}
	if !r.assigned[tp] {
		// An error means Run is stopping (ctx is done): the records
		// stay held and are released by stop.
		if err := r.g.Assign([]sluice.TopicPartition{tp}); err == nil {
			r.assigned[tp] = true
		}
	}
	if fp.HighWatermark >= 0 {
		r.g.HighWatermark(tp, fp.HighWatermark)
	}
	limit := r.s.cfg.maxDeliveries()
	for _, kr := range fp.Records {
		h := &heldRecord{rec: kr, since: now}
		if d := kr.AcquisitionDeadline(); !d.IsZero() {
			h.lock = max(d.Sub(now), 0)
		}
		r.held[heldKey{tp: tp, offset: kr.Offset}] = h
		rec := shareToRecord(topic, fp.Partition, kr)
		if n := kr.DeliveryCount(); n > limit {
			r.flush(tp)
			reason := fmt.Errorf("franz: delivered %d times, more than ShareConfig.MaxDeliveries (%d)", n, limit)
			r.g.DeadLetterRecord(tp, rec, reason)
			continue
		}
		if len(r.batch) == maxBatch {
			r.flush(tp)
		}
		r.batch = append(r.batch, rec)
	}
	r.flush(tp)
}

// shareToRecord converts a kgo record.
func shareToRecord(topic string, partition int32, kr *kgo.Record) sluice.Record {
	rec := sluice.Record{Topic: topic, Partition: partition, Offset: kr.Offset,
		Key: kr.Key, Value: kr.Value, Timestamp: kr.Timestamp}
	if len(kr.Headers) > 0 {
		rec.Headers = make([]sluice.Header, len(kr.Headers))
		for i, h := range kr.Headers {
			rec.Headers[i] = sluice.Header{Key: h.Key, Value: h.Value}
		}
	}
	return rec
}

// flush delivers the pending batch of tp. A pause the runtime asks for
// needs nothing here: the next poll waits for every outcome anyway.
func (r *shareRunner) flush(tp sluice.TopicPartition) {
	if len(r.batch) == 0 {
		return
	}
	recs := append([]sluice.Record(nil), r.batch...)
	clear(r.batch)
	r.batch = r.batch[:0]
	r.g.Deliver(tp, recs)
}

// fetchError logs a fetch error; a closed client is fatal. UNKNOWN_TOPIC_ID
// marks the topic gone (see topicsGone): kgo reports it only once it
// persists, the topic having been deleted.
func (r *shareRunner) fetchError(topic string, p int32, err error) {
	if r.gone.mark(topic, err) {
		return
	}
	if fatal := fetchErrorFatal(r.log, "share client", topic, p, err); fatal != nil {
		r.fatal = fatal
	}
}

// topicsGone starts consuming anew each topic the broker no longer knows
// by the ID the client holds: the topic was deleted, and maybe recreated
// under the same name with a new ID, which kgo never adopts by itself (it
// fails the topic with UNKNOWN_TOPIC_ID until it is purged from the
// client and added back). The records of the old topic can no longer be
// acknowledged: the graphs of its partitions are lost (stopped without
// outcome, like a partition lost in a consumer group), the records still
// held are released to settle them in kgo (the broker answers
// UNKNOWN_TOPIC_ID, logged by ackResults), and the topic is purged from
// the client and added back, so that the records of a recreated topic are
// delivered (to new graphs) from where the share group starts on it.
//
// A report about a topic consumed anew lately may come from a fetch sent
// under its old ID (see consumedAnew): it is ignored, and the topic's
// graphs and records of the new ID are kept. A real deletion goes on
// being reported and is handled once the grace is over; meanwhile the
// caller polls at most once per pollIdle (it reports whether it ignored
// a report).
func (r *shareRunner) topicsGone(ctx context.Context) (ignored bool) {
	if len(r.gone) == 0 {
		return false
	}
	for topic := range r.gone {
		if r.anew.stale(topic) {
			ignored = true
			r.log.Debug("ignored a report that the broker no longer knows the topic's ID: it was consumed anew under its current ID lately, and a fetch sent before may answer for the old one",
				"topic", topic)
			continue
		}
		var tps []sluice.TopicPartition
		for tp := range r.assigned {
			if tp.Topic == topic {
				tps = append(tps, tp)
				delete(r.assigned, tp)
			}
		}
		dropped := 0
		for k, h := range r.held {
			if k.tp.Topic == topic {
				h.rec.Ack(kgo.AckRelease)
				delete(r.held, k)
				dropped++
			}
		}
		r.g.Lose(tps)
		r.log.Warn("the broker no longer knows the topic's ID: it was deleted (and maybe recreated); the outcomes of its records still unfinished are lost, and it is consumed anew under its current ID",
			"topic", topic, "partitions_lost", len(tps), "records_dropped", dropped)
		if !r.resubscribe(ctx, topic) {
			break // Run stops: stop releases and acknowledges the rest
		}
		// The grace starts once the purge is done (it waits for kgo's
		// metadata loop): a fetch sent until then still names the old
		// ID.
		r.anew.consumed(topic, time.Now())
	}
	clear(r.gone)
	// Outcomes the lost graphs reported before they stopped are for
	// records no longer held: applyAcks ignores them.
	r.applyAcks()
	return ignored
}

// resubscribe purges topic from the client and adds it back on a
// goroutine of its own, and waits for it while this (the poll) goroutine
// goes on acknowledging the outcomes the graphs report and renewing the
// locks of the records still held: the purge runs on kgo's metadata loop
// and waits for a Metadata request in flight there (kgo retries a slow
// one), and records of other topics must not see their locks expire
// meanwhile. It reports false when ctx ended first: Run stops, and
// closing the client ends the purge.
func (r *shareRunner) resubscribe(ctx context.Context, topic string) bool {
	done := make(chan struct{})
	r.s.background.Add(1)
	go func() {
		defer r.s.background.Done()
		defer close(done)
		resubscribe(r.cl, topic)
	}()
	tick := time.NewTicker(pollIdle)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return true
		case <-r.g.Wake():
			r.applyAcks()
		case <-tick.C:
			r.applyAcks()
			r.renew(time.Now())
		case <-ctx.Done():
			return false
		}
	}
}

// ackStatus maps a runtime outcome to kgo's acknowledgement.
func ackStatus(o sluice.AckOutcome) kgo.AckStatus {
	switch o {
	case sluice.AckRejected:
		return kgo.AckReject
	case sluice.AckReleased:
		return kgo.AckRelease
	}
	return kgo.AckAccept
}

// applyAcks acknowledges the outcomes the runtime reported and stops
// holding those records.
func (r *shareRunner) applyAcks() {
	r.acks = r.g.Acks(r.acks[:0])
	for _, a := range r.acks {
		k := heldKey{tp: a.TopicPartition, offset: a.Offset}
		if h, ok := r.held[k]; ok {
			h.rec.Ack(ackStatus(a.Outcome))
			delete(r.held, k)
		}
	}
	clear(r.acks)
}

// renew extends the acquisition lock of every record held for more than
// half of it.
func (r *shareRunner) renew(now time.Time) {
	for _, h := range r.held {
		if h.lock > 0 && now.Sub(h.since) >= h.lock/2 {
			h.rec.Ack(kgo.AckRenew)
			h.since = now
		}
	}
}

// ackResults is kgo's ShareAckCallback: failed acknowledgements are
// logged (their records come back after the lock expires, unless their
// topic was deleted).
func (r *shareRunner) ackResults(_ *kgo.Client, rs kgo.ShareAckResults) {
	for _, res := range rs {
		switch {
		case res.Err == nil:
		case errors.Is(res.Err, kerr.UnknownTopicID), errors.Is(res.Err, kerr.UnknownTopicOrPartition):
			r.log.Warn("share acknowledgement failed: the broker no longer knows the topic (deleted, or deleted and recreated); the outcomes of these records are lost with it",
				"topic", res.Topic, "partition", res.Partition, "err", res.Err)
		default:
			r.log.Warn("share acknowledgement failed; the broker redelivers its records when their lock expires",
				"topic", res.Topic, "partition", res.Partition, "err", res.Err)
		}
	}
}

// releaseHeld releases every record still held and returns how many.
func (r *shareRunner) releaseHeld() int {
	n := len(r.held)
	for k, h := range r.held {
		h.rec.Ack(kgo.AckRelease)
		delete(r.held, k)
	}
	return n
}

// stop is the shutdown sequence: drain, acknowledge the outcomes, release
// the rest, flush, close.
func (r *shareRunner) stop() error {
	r.drain()
	r.applyAcks()
	if n := r.releaseHeld(); n > 0 {
		r.log.Info("released unfinished share group records for redelivery", "records", n)
	}
	began := time.Now()
	timeout := r.s.cfg.closeTimeout()
	ctx, cancel := context.WithTimeout(context.Background(), timeout*2/5)
	flushErr := r.cl.FlushAcks(ctx)
	cancel()
	if flushErr != nil {
		flushErr = fmt.Errorf("franz: shutdown: flushing the acknowledgements did not finish within 40%% of ShareConfig.CloseTimeout (%v): %w", timeout, flushErr)
	}
	return errors.Join(flushErr, r.closeClient(began.Add(timeout)))
}

// drain runs Group.Shutdown, which waits up to the drain timeout for the
// graphs to finish what they hold, on a goroutine of its own, while this
// (the poll) goroutine keeps renewing the locks of the held records: a
// record still processed during the drain is not redelivered to another
// member when its lock would expire. The renewals touch only r.held and
// kgo records, never the Group, so the Group's calls stay one at a time.
// Records whose outcome is known but not applied yet are renewed too;
// their ACCEPT, REJECT or RELEASE after the drain overrides the renewal.
func (r *shareRunner) drain() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.g.Shutdown()
	}()
	tick := time.NewTicker(pollIdle)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			r.renew(time.Now())
		}
	}
}

// fail stops every graph without acknowledging and closes the client
// after a fatal error.
func (r *shareRunner) fail() error {
	tps := make([]sluice.TopicPartition, 0, len(r.assigned))
	for tp := range r.assigned {
		tps = append(tps, tp)
	}
	r.g.Lose(tps)
	clear(r.assigned)
	clear(r.held)
	return errors.Join(r.fatal, r.closeClient(time.Now().Add(r.s.cfg.closeTimeout())))
}

// closeClient closes the client (leaving the share group) on its own
// goroutine and waits for it until deadline. Past deadline Close is left
// running: the error says so.
func (r *shareRunner) closeClient(deadline time.Time) error {
	done := make(chan struct{})
	r.s.background.Add(1)
	go func() {
		defer r.s.background.Done()
		defer close(done)
		r.cl.Close()
	}()
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return fmt.Errorf("franz: shutdown: closing the share client did not finish within ShareConfig.CloseTimeout (%v); it goes on in the background",
			r.s.cfg.closeTimeout())
	}
}
