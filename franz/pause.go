package franz

import (
	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/saturation"
)

// This file pauses and resumes partitions in kgo for the core.
//
// kgo strips a paused partition's records from the fetch it has buffered
// and fetches them again after the resume (pkg/kgo/source.go,
// takeNBuffered: the partition's cursor stays where the last poll left
// it). A pause asked while the poll's records are handled is therefore
// not passed to kgo at once: at the end of the handling the source first
// takes what kgo has buffered, as far as the core's spare room goes
// (Core.SpareRoom: up to half its share, so that the records held for a
// partition the runtime does not resume leave room for the polls that
// feed the others), and hands it to the core, which holds the records of the
// partitions it paused and delivers the others; only then are the
// partitions paused in kgo. Records come out of kgo in order and the core
// holds a paused partition's records behind the ones it already held, so
// the order of a partition is kept; what the core had no room for is
// stripped and fetched again, as without this step.
//
// kgo strips a paused partition's records when it is polled, not when it
// is paused, and a broker answers a fetch with whole batches, which may
// hold many times the source's share of a partition. So the poll loop
// takes nothing from kgo while the runtime's budget is full (saturated):
// a record taken then would only wait for admission and pause its
// partition, and kgo would strip the rest of that partition's batch and
// fetch it again on resume. kgo keeps its buffered fetch whole meanwhile
// (it fetches no more from that broker until the fetch was taken), and a
// partition paused and resumed before the next poll loses nothing. Two
// exceptions keep fetch errors coming (a deleted topic is seen only in a
// fetch, and losing its partitions may be what frees the budget): what
// kgo buffered is taken when it holds no record, and after
// saturatedPollMax of saturation the loop polls once as before.
//
// With a transactional producer the buffered records are not taken: an
// aborted transaction moves kgo's positions (Rewind) while the poll's
// records are handled, and a record taken after that move could not be
// told from one fetched before it.

// Pause marks tp to be paused in kgo at the end of the poll's handling
// (pausePending). The core calls it from Flush, on the poll loop.
func (r *runner) Pause(tp sluice.TopicPartition) error {
	r.pausing = append(r.pausing, tp)
	return nil
}

// pausePending takes what kgo has buffered (as far as the core has spare
// room)
// and hands it to the core, then pauses in kgo the partitions the core
// paused meanwhile that it still owns. Pauses asked while the buffered
// records are handed over are applied too; their own buffered records are
// left to kgo.
func (r *runner) pausePending() {
	if len(r.pausing) == 0 {
		return
	}
	if room := r.core.SpareRoom(); room > 0 && r.txns == nil && r.cl.BufferedFetchRecords() > 0 {
		// kgo takes a nil context to mean: what is buffered, without
		// waiting (a cancelled one returns its error and nothing else).
		//lint:ignore SA1012 see above
		r.handle(r.cl.PollRecords(nil, room))
	}
	m := map[string][]int32{}
	for _, tp := range r.pausing {
		if r.core.Owns(tp) {
			m[tp.Topic] = append(m[tp.Topic], tp.Partition)
		}
	}
	r.pausing = r.pausing[:0]
	if len(m) > 0 {
		r.cl.PauseFetchPartitions(m)
	}
}

// Resume resumes tps in kgo. A partition whose pause is still pending is
// not paused after all.
func (r *runner) Resume(tps []sluice.TopicPartition) error {
	m := map[string][]int32{}
	for _, tp := range tps {
		m[tp.Topic] = append(m[tp.Topic], tp.Partition)
		r.unpend(tp)
	}
	r.cl.ResumeFetchPartitions(m)
	return nil
}

// unpend removes tp from the pauses pending.
func (r *runner) unpend(tp sluice.TopicPartition) {
	for i := 0; i < len(r.pausing); {
		if r.pausing[i] == tp {
			r.pausing = append(r.pausing[:i], r.pausing[i+1:]...)
			continue
		}
		i++
	}
}

// saturated reports whether g says its budget is full: a delivery of any
// partition would then only wait for admission and pause its partition,
// and kgo would strip the rest of that partition's buffered fetch (a
// broker answers with whole batches, which may be many times the
// source's share) to fetch it again on resume. So the poll loop takes
// nothing from kgo meanwhile and kgo keeps its buffer whole. A Group
// that does not tell (one wrapping the runtime's without a Saturated of
// its own) is never saturated: the source then finds out from Deliver,
// and kgo strips and fetches again what a paused partition had
// buffered.
func saturated(g sluice.Group) bool {
	return saturation.Of(g)
}
