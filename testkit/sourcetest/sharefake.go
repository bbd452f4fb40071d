package sourcetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-go/sluice"
)

// fakeShareBrokerLimit is the in-memory broker's delivery count limit
// (group.share.delivery.count.limit): a record released after that many
// deliveries is archived.
const fakeShareBrokerLimit = 5

// FakeShareDriver is a [ShareDriver] whose topics and share groups live in
// memory, with a share source of its own: the reference the share
// scenarios run on without a broker, and, given a [ShareFault], a source
// that breaks the contract on purpose, to show the checks fire.
//
// Its broker hands each available record to the member that asks first,
// locked to it (without expiry) until the member acknowledges it: accepted
// or rejected records are done, a released one is available again (or
// archived once delivered 5 times, the broker's delivery count limit); a
// member that leaves releases what it holds. Its source polls a batch of
// records when it holds none, assigns a partition when its first record
// arrives, delivers the records (or hands those delivered more than Limit
// times to DeadLetterRecord), acknowledges each outcome Acks returns, and
// on shutdown drains, acknowledges the last outcomes and releases the
// rest.
type FakeShareDriver struct {
	// Limit is the sources' delivery limit (MaxDeliveries), below the
	// broker's (5); NewFakeShareDriver sets 3.
	Limit int
	// Fault is how the sources break the contract; zero for none.
	Fault ShareFault

	memBroker // CreateTopic and Produce
	groups    map[groupTopic][][]shareSlot
	changed   chan struct{} // closed and replaced when records become available
}

// ShareFault is a way for the sources of a [FakeShareDriver] to break the
// share contract; each names the clause it breaks.
type ShareFault int

// The faults.
const (
	// NoFault: the sources keep the contract.
	NoFault ShareFault = iota
	// FaultPollAhead (§3): poll and deliver the next batch while records
	// are held, to paused partitions too.
	FaultPollAhead
	// FaultReleaseAccepted (§9): acknowledge an accepted record as
	// released, so the broker delivers it again.
	FaultReleaseAccepted
	// FaultCommit (§10): commit what Offsets returns.
	FaultCommit
	// FaultAcceptUnfinished (§11): at shutdown, accept the records
	// without an outcome instead of releasing them.
	FaultAcceptUnfinished
	// FaultIgnoreMaxDeliveries (§12): deliver every record to the graph,
	// whatever its delivery count.
	FaultIgnoreMaxDeliveries
)

// shareSlot is the broker's state of one record for one group.
type shareSlot struct {
	state slotState
	count int              // deliveries
	owner *fakeShareSource // while acquired
}

type slotState int8

const (
	slotAvailable slotState = iota
	slotAcquired
	slotAcknowledged
	slotArchived
)

// NewFakeShareDriver returns an empty driver whose sources have a
// delivery limit of 3 and no fault.
func NewFakeShareDriver() *FakeShareDriver {
	d := &FakeShareDriver{Limit: 3, memBroker: newMemBroker(),
		groups: map[groupTopic][][]shareSlot{}, changed: make(chan struct{})}
	d.produced = d.notifyLocked
	return d
}

// MaxDeliveries implements ShareDriver: Limit.
func (d *FakeShareDriver) MaxDeliveries() int { return d.Limit }

// NewShareSource implements ShareDriver.
func (d *FakeShareDriver) NewShareSource(_ *testing.T, group, topic string) sluice.Source {
	return &fakeShareSource{d: d, key: groupTopic{group, topic}, fault: d.Fault, held: map[RecordAt]bool{}}
}

// Unacknowledged implements ShareDriver: for every partition once the
// group ran, the records neither acknowledged nor archived.
func (d *FakeShareDriver) Unacknowledged(_ *testing.T, group, topic string) map[int32]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[int32]int64{}
	if _, ok := d.groups[groupTopic{group, topic}]; !ok {
		return out
	}
	slots := d.slotsLocked(groupTopic{group, topic})
	for p, ss := range slots {
		var n int64
		for _, s := range ss {
			if s.state == slotAvailable || s.state == slotAcquired {
				n++
			}
		}
		out[int32(p)] = n
	}
	return out
}

// slotsLocked returns the group's slots, grown to the topic's records.
func (d *FakeShareDriver) slotsLocked(key groupTopic) [][]shareSlot {
	logs := d.topics[key.topic]
	slots := d.groups[key]
	if slots == nil {
		slots = make([][]shareSlot, len(logs))
	}
	for p, log := range logs {
		for len(slots[p]) < len(log) {
			slots[p] = append(slots[p], shareSlot{})
		}
	}
	d.groups[key] = slots
	return slots
}

// notifyLocked, with d.mu held, wakes the sources waiting for records.
func (d *FakeShareDriver) notifyLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// acquire locks up to limit available records for s, partition by
// partition in offset order, and returns them with their delivery counts,
// and the channel closed when more records may be available.
func (d *FakeShareDriver) acquire(s *fakeShareSource, limit int) (recs []sluice.Record, counts []int, changed <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	slots := d.slotsLocked(s.key)
	logs := d.topics[s.key.topic]
	for p := range slots {
		for off := range slots[p] {
			if len(recs) == limit {
				return recs, counts, d.changed
			}
			sl := &slots[p][off]
			if sl.state != slotAvailable {
				continue
			}
			sl.state, sl.owner = slotAcquired, s
			sl.count++
			recs = append(recs, logs[p][off])
			counts = append(counts, sl.count)
		}
	}
	return recs, counts, d.changed
}

// ack applies s's acknowledgement of a record it holds.
func (d *FakeShareDriver) ack(s *fakeShareSource, r RecordAt, o sluice.AckOutcome) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sl := &d.slotsLocked(s.key)[r.Partition][r.Offset]
	if sl.state != slotAcquired || sl.owner != s {
		return // Kafka answers INVALID_RECORD_STATE
	}
	sl.owner = nil
	switch {
	case o == sluice.AckAccepted:
		sl.state = slotAcknowledged
	case o == sluice.AckRejected || sl.count >= fakeShareBrokerLimit:
		sl.state = slotArchived
	default:
		sl.state = slotAvailable
		d.notifyLocked()
	}
}

// leave releases every record s still holds, as a broker does when a
// member leaves its share group.
func (d *FakeShareDriver) leave(s *fakeShareSource) {
	d.mu.Lock()
	var mine []RecordAt
	for p, ss := range d.slotsLocked(s.key) {
		for off, sl := range ss {
			if sl.state == slotAcquired && sl.owner == s {
				mine = append(mine, RecordAt{sluice.TopicPartition{Topic: s.key.topic, Partition: int32(p)}, int64(off)})
			}
		}
	}
	d.mu.Unlock()
	for _, r := range mine {
		d.ack(s, r, sluice.AckReleased)
	}
}

// fakeShareSource is a share source of a FakeShareDriver group.
type fakeShareSource struct {
	d     *FakeShareDriver
	key   groupTopic
	fault ShareFault

	// poll goroutine only
	g        sluice.AckGroup
	assigned map[sluice.TopicPartition]bool
	held     map[RecordAt]bool
}

// fakeShareBatch is how many records one poll acquires.
const fakeShareBatch = 32

// Run implements sluice.Source.
func (s *fakeShareSource) Run(ctx context.Context, g sluice.Group) error {
	ag, ok := g.(sluice.AckGroup)
	if !ok {
		return fmt.Errorf("sourcetest: the fake share source needs a sluice.AckGroup, got %T", g)
	}
	if err := ag.TrackAcks(); err != nil {
		return err
	}
	s.g, s.assigned = ag, map[sluice.TopicPartition]bool{}
	defer s.d.leave(s)
	joined := false
	for {
		if ctx.Err() != nil {
			return s.stop()
		}
		var changed <-chan struct{}
		polled := 0
		if len(s.held) == 0 || s.fault == FaultPollAhead {
			polled, changed = s.poll()
			if !joined {
				joined = true
				ag.Joined()
			}
		}
		if polled == 0 {
			select {
			case <-ag.Wake():
			case <-changed:
			case <-ctx.Done():
			}
		}
		ag.Polled()
		s.applyAcks()
		ag.Resumable()
		if offs := ag.Offsets(); s.fault == FaultCommit && len(offs) > 0 {
			ag.Committed(offs, 0, nil)
		}
	}
}

// poll acquires a batch and delivers it, assigning partitions on their
// first record.
func (s *fakeShareSource) poll() (int, <-chan struct{}) {
	recs, counts, changed := s.d.acquire(s, fakeShareBatch)
	var batch []sluice.Record
	flush := func(tp sluice.TopicPartition) {
		if len(batch) > 0 {
			s.g.Deliver(tp, batch)
			batch = nil
		}
	}
	for i, r := range recs {
		tp := sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		if i > 0 && recs[i-1].Partition != r.Partition {
			flush(sluice.TopicPartition{Topic: r.Topic, Partition: recs[i-1].Partition})
		}
		if !s.assigned[tp] {
			if err := s.g.Assign([]sluice.TopicPartition{tp}); err == nil {
				s.assigned[tp] = true
			}
		}
		at := RecordAt{tp, r.Offset}
		s.held[at] = true
		if counts[i] > s.d.Limit && s.fault != FaultIgnoreMaxDeliveries {
			flush(tp)
			reason := fmt.Errorf("sourcetest: delivered %d times, more than the limit %d", counts[i], s.d.Limit)
			if !s.g.DeadLetterRecord(tp, r, reason) {
				delete(s.held, at)
				s.d.ack(s, at, sluice.AckReleased)
			}
			continue
		}
		batch = append(batch, r)
	}
	if len(recs) > 0 {
		flush(sluice.TopicPartition{Topic: s.key.topic, Partition: recs[len(recs)-1].Partition})
	}
	return len(recs), changed
}

// applyAcks acknowledges the outcomes the group reported.
func (s *fakeShareSource) applyAcks() {
	for _, a := range s.g.Acks(nil) {
		at := RecordAt{a.TopicPartition, a.Offset}
		if !s.held[at] {
			continue
		}
		delete(s.held, at)
		o := a.Outcome
		if s.fault == FaultReleaseAccepted && o == sluice.AckAccepted {
			o = sluice.AckReleased
		}
		s.d.ack(s, at, o)
	}
}

// stop drains, acknowledges the last outcomes and releases the rest.
func (s *fakeShareSource) stop() error {
	s.g.Shutdown()
	s.applyAcks()
	unfinished := sluice.AckReleased
	if s.fault == FaultAcceptUnfinished {
		unfinished = sluice.AckAccepted
	}
	for at := range s.held {
		s.d.ack(s, at, unfinished)
		delete(s.held, at)
	}
	return nil
}
