package testkit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice"
)

// ErrStopped is returned by the Fake's control methods once its Run has
// returned.
var ErrStopped = errors.New("testkit: the fake source is not running")

// Fake is an in-memory sluice.Source that behaves like a Kafka consumer
// whose group assignment the test controls: each partition is a log of
// records; an assigned partition is delivered from its committed offset;
// a partition the group asks to pause stops being delivered until the
// group resumes it; a revoked partition's final offsets are committed and
// a lost partition's are not. Offsets returned by the group are committed
// as soon as the group signals them.
//
// Control methods (Assign, Send, Revoke, ...) may be called from any
// goroutine; they run on the Fake's poll goroutine, so they block until Run
// is running and return ErrStopped once it returned. A Fake runs once: a
// second Run returns an error at once (create a Fake per pipeline.Run).
type Fake struct {
	cmds    chan func(sluice.Group)
	stopped chan struct{}
	started atomic.Bool

	// owned by the poll goroutine
	parts  map[sluice.TopicPartition]*fakePartition
	order  []sluice.TopicPartition
	joined bool
	group  sluice.Group

	store      sluice.OffsetStore // consulted by Assign (UseOffsetStore)
	storeGroup string

	mu        sync.Mutex
	committed map[sluice.TopicPartition]int64
	changed   chan struct{} // closed and replaced on every commit
}

type fakePartition struct {
	log      []sluice.Record
	pos      int   // index in log of the next record to deliver
	start    int   // pos at the last assignment
	from     int64 // offset delivery started at: records appended later below it are passed over, as a broker would
	assigned bool
	paused   bool
}

// deliverChunk is the most records the Fake hands over in one Deliver.
const deliverChunk = 64

// NewFake returns an idle fake source; pass it to pipeline.Run.
func NewFake() *Fake {
	return &Fake{
		cmds:      make(chan func(sluice.Group)),
		stopped:   make(chan struct{}),
		parts:     make(map[sluice.TopicPartition]*fakePartition),
		committed: make(map[sluice.TopicPartition]int64),
		changed:   make(chan struct{}),
	}
}

// Run implements sluice.Source. A second call returns an error at once.
func (f *Fake) Run(ctx context.Context, g sluice.Group) error {
	if !f.started.CompareAndSwap(false, true) {
		return errors.New("testkit: Fake.Run called twice: a Fake runs once; create one with NewFake for each pipeline.Run")
	}
	defer close(f.stopped)
	f.group = g
	for {
		f.deliver(g)
		g.Polled()
		select {
		case cmd := <-f.cmds:
			cmd(g)
		case <-g.Wake():
			for _, tp := range g.Resumable() {
				if p := f.parts[tp]; p != nil {
					p.paused = false
				}
			}
			f.commit(g.Offsets())
		case <-ctx.Done():
			f.commit(g.Shutdown())
			for _, p := range f.parts {
				p.assigned = false
			}
			return nil
		}
	}
}

// deliver hands every assigned, unpaused partition what it has.
func (f *Fake) deliver(g sluice.Group) {
	for more := true; more; {
		more = false
		for _, tp := range f.order {
			p := f.parts[tp]
			for p.assigned && p.pos < len(p.log) && p.log[p.pos].Offset < p.from {
				p.pos++ // appended after the assignment, below where it started
				p.start++
			}
			if !p.assigned || p.paused || p.pos >= len(p.log) {
				continue
			}
			n := min(len(p.log)-p.pos, deliverChunk)
			p.paused = g.Deliver(tp, p.log[p.pos:p.pos+n])
			p.pos += n
			more = true
		}
	}
}

func (f *Fake) commit(offs []sluice.Offset) {
	if len(offs) == 0 {
		return
	}
	f.mu.Lock()
	for _, o := range offs {
		f.committed[o.TopicPartition] = o.Next
	}
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	f.group.Committed(offs, 0, nil)
}

// do runs cmd on the poll goroutine and waits for it.
func (f *Fake) do(cmd func(sluice.Group)) error {
	done := make(chan struct{})
	select {
	case f.cmds <- func(g sluice.Group) { cmd(g); close(done) }:
	case <-f.stopped:
		return ErrStopped
	}
	<-done
	return nil
}

func (f *Fake) part(tp sluice.TopicPartition) *fakePartition {
	p, ok := f.parts[tp]
	if !ok {
		p = &fakePartition{}
		f.parts[tp] = p
		f.order = append(f.order, tp)
	}
	return p
}

func tps(topic string, partitions []int32) []sluice.TopicPartition {
	out := make([]sluice.TopicPartition, len(partitions))
	for i, p := range partitions {
		out[i] = sluice.TopicPartition{Topic: topic, Partition: p}
	}
	return out
}

// Assign assigns partitions of topic to the consumer and returns once their
// graphs run. Delivery starts at each partition's committed offset (the
// start of its log when nothing was committed). Partitions the consumer
// already owns are left as they are (as Kafka does not assign a partition
// twice): their delivery position and pause are kept and their graphs are
// not rebuilt. With an offset store (UseOffsetStore) a partition the store
// names starts there instead. The group's error, if any graph failed to build, is
// returned.
func (f *Fake) Assign(topic string, partitions ...int32) error {
	var err error
	if serr := f.do(func(g sluice.Group) {
		var list []sluice.TopicPartition
		for _, tp := range tps(topic, partitions) {
			if !f.part(tp).assigned && !slices.Contains(list, tp) {
				list = append(list, tp)
			}
		}
		start, cerr := f.claim(list)
		if cerr != nil {
			err = cerr
			return
		}
		for _, tp := range list {
			p := f.part(tp)
			p.assigned, p.paused = true, false
			next := f.Committed(tp.Topic, tp.Partition)
			if off, ok := start[tp]; ok {
				next = off
			}
			p.pos = slices.IndexFunc(p.log, func(r sluice.Record) bool { return r.Offset >= next })
			if p.pos < 0 {
				p.pos = len(p.log)
			}
			p.start = p.pos
			p.from = next
		}
		if !f.joined {
			f.joined = true
			g.Joined()
		}
		if len(list) > 0 {
			err = g.Assign(list)
		}
	}); serr != nil {
		return serr
	}
	return err
}

// Revoke takes partitions away gracefully and returns once the group
// drained them and their final offsets were committed.
func (f *Fake) Revoke(topic string, partitions ...int32) error {
	return f.do(func(g sluice.Group) {
		list := tps(topic, partitions)
		f.commit(g.Revoke(list))
		f.unassign(list)
	})
}

// Lose takes partitions away as lost: nothing more of them is committed.
func (f *Fake) Lose(topic string, partitions ...int32) error {
	return f.do(func(g sluice.Group) {
		list := tps(topic, partitions)
		g.Lose(list)
		f.unassign(list)
	})
}

func (f *Fake) unassign(list []sluice.TopicPartition) {
	for _, tp := range list {
		if p := f.parts[tp]; p != nil {
			p.assigned, p.paused = false, false
		}
	}
}

// Send appends values to a partition's log with consecutive offsets after
// its last record (starting at 0), with no key and no headers (see
// [Fake.SendMessages]).
func (f *Fake) Send(topic string, partition int32, values ...[]byte) error {
	msgs := make([]sluice.Message, len(values))
	for i, v := range values {
		msgs[i].Value = v
	}
	return f.SendMessages(topic, partition, msgs...)
}

// SendMessages appends records with the key, value and headers of msgs to
// a partition's log, with consecutive offsets after its last record
// (starting at 0).
func (f *Fake) SendMessages(topic string, partition int32, msgs ...sluice.Message) error {
	return f.do(func(sluice.Group) {
		p := f.part(sluice.TopicPartition{Topic: topic, Partition: partition})
		next := p.next()
		for i, m := range msgs {
			p.log = append(p.log, sluice.Record{Topic: topic, Partition: partition, Offset: next + int64(i),
				Key: m.Key, Value: m.Value, Headers: m.Headers})
		}
	})
}

// next returns the offset after the partition's last record (0 when its
// log is empty).
func (p *fakePartition) next() int64 {
	if n := len(p.log); n > 0 {
		return p.log[n-1].Offset + 1
	}
	return 0
}

// SendRecords appends records to their partitions' logs, with every field
// as given except a zero Offset: a record whose Offset is 0 gets the
// offset after the last record of its partition (counting those before it
// in recs), so records built without offsets are numbered 0, 1, 2, ... and
// an explicit 0 on an empty partition means 0 as well. Other offsets must
// increase within a partition (gaps are allowed, as after compaction);
// otherwise nothing is appended and an error names the record.
func (f *Fake) SendRecords(recs ...sluice.Record) error {
	var err error
	if serr := f.do(func(sluice.Group) {
		last := map[sluice.TopicPartition]int64{}
		numbered := make([]sluice.Record, len(recs))
		for i, r := range recs {
			tp := sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition}
			prev, ok := last[tp]
			if !ok {
				prev = -1
				if p := f.parts[tp]; p != nil {
					prev = p.next() - 1
				}
			}
			if r.Offset == 0 {
				r.Offset = prev + 1
			}
			if r.Offset <= prev {
				err = fmt.Errorf("testkit: record %s/%d at offset %d does not follow offset %d; offsets must increase",
					r.Topic, r.Partition, r.Offset, prev)
				return
			}
			last[tp] = r.Offset
			numbered[i] = r
		}
		for _, r := range numbered {
			p := f.part(sluice.TopicPartition{Topic: r.Topic, Partition: r.Partition})
			p.log = append(p.log, r)
		}
	}); serr != nil {
		return serr
	}
	return err
}

// SetCommitted sets the partition's committed offset to next, as another
// member of the consumer group would have committed it, so that the next
// Assign of the partition delivers from next: to test a consumer that
// takes a partition over in the middle of its log. It is an error, naming
// the partition, when the consumer owns the partition now (the group lets
// only its owner commit) or when next is negative; ErrStopped once Run
// returned.
func (f *Fake) SetCommitted(topic string, partition int32, next int64) error {
	if next < 0 {
		return fmt.Errorf("testkit: SetCommitted(%s/%d, %d): the offset must not be negative", topic, partition, next)
	}
	var err error
	if serr := f.do(func(sluice.Group) {
		tp := sluice.TopicPartition{Topic: topic, Partition: partition}
		if p := f.parts[tp]; p != nil && p.assigned {
			err = fmt.Errorf("testkit: SetCommitted(%s/%d, %d): the consumer owns the partition; revoke it first", topic, partition, next)
			return
		}
		f.mu.Lock()
		f.committed[tp] = next
		close(f.changed)
		f.changed = make(chan struct{})
		f.mu.Unlock()
	}); serr != nil {
		return serr
	}
	return err
}

// Committed returns the partition's committed offset (the next offset to
// consume), or -1 when nothing was committed.
func (f *Fake) Committed(topic string, partition int32) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.committed[sluice.TopicPartition{Topic: topic, Partition: partition}]; ok {
		return c
	}
	return -1
}

// Changed returns a channel that is closed at the next commit, to wait for
// Committed to move without polling.
func (f *Fake) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// Delivered returns how many records of the partition's log were handed to
// the group since its last assignment started (from its committed offset).
func (f *Fake) Delivered(topic string, partition int32) int {
	n := 0
	_ = f.do(func(sluice.Group) {
		if p := f.parts[sluice.TopicPartition{Topic: topic, Partition: partition}]; p != nil {
			n = p.pos - p.start
		}
	})
	return n
}

// Stopped is closed when Run has returned.
func (f *Fake) Stopped() <-chan struct{} { return f.stopped }
