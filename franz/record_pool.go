package franz

import (
	"math/bits"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordPool is the kgo.PoolRecords of a group source's client: kgo
// decodes every fetched batch into a []kgo.Record taken from it, and the
// poll loop recycles each record (kgo.Record.Recycle) once it converted
// it into a sluice.Record (runner.partition), so kgo puts the slice back
// once every record of its batch was taken: the slices are reused
// instead of allocated per batch, which is most of what the client
// allocates per record and so most of what makes the collector run.
//
// Only the slices of kgo.Record structs are pooled. The keys, values and
// headers the records point to are not (the pool implements no
// kgo.PoolDecompressBytes): a sluice.Record's bytes stay valid for as
// long as anything refers to them, after the kgo.Record was recycled.
// A record kgo drops without handing it over (a paused partition's,
// stripped from a buffered fetch) is never recycled; its slice is then
// left to the collector, as without the pool.
//
// Slices come in power-of-two capacities, one sync.Pool each; it is safe
// for concurrent use, as kgo requires.
type recordPool struct {
	classes [maxRecordClass + 1]sync.Pool // of *[]kgo.Record, by log2(cap)
}

// maxRecordClass is the largest capacity pooled, as a power of two: a
// batch of more records gets a slice of its own.
const maxRecordClass = 16

var _ kgo.PoolRecords = (*recordPool)(nil)

// GetRecords implements kgo.PoolRecords: a slice of capacity at least n.
func (p *recordPool) GetRecords(n int) []kgo.Record {
	c := recordClass(n)
	if c > maxRecordClass {
		return make([]kgo.Record, 0, n)
	}
	if s, ok := p.classes[c].Get().(*[]kgo.Record); ok {
		return (*s)[:0]
	}
	return make([]kgo.Record, 0, 1<<c)
}

// PutRecords implements kgo.PoolRecords. kgo zeroes only the records
// that were recycled: those it decoded and did not keep (below the offset
// a fetch asked for, as when a fetch starts inside a batch) still point
// into the fetched bytes, so the whole slice is cleared before it is kept,
// and a pooled slice holds nothing of an earlier fetch. A slice whose
// capacity is no class's is dropped.
func (p *recordPool) PutRecords(s []kgo.Record) {
	c := bits.Len(uint(cap(s))) - 1
	if cap(s) == 0 || cap(s) != 1<<c || c > maxRecordClass {
		return
	}
	s = s[:cap(s)]
	clear(s)
	s = s[:0]
	p.classes[c].Put(&s)
}

// recordClass returns the least c with 1<<c >= n.
func recordClass(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}
