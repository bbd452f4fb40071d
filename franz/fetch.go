package franz

import (
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

// The source sizes kgo's prefetch from the runtime's in-flight limits, so
// that what kgo fetched and the source has not taken yet is a fraction of
// them, however many partitions the source owns. kgo issues at most one
// fetch per broker at a time, at most maxConcurrentFetches in all, and
// keeps each answer buffered, decompressed, until polls took all of it.
//
// Fetch sizes are bytes on the wire; compressed batches take more once
// decompressed (zstd on repetitive values: 60 times more). So the source
// watches the batches kgo reads (fetchSizer, a kgo.HookFetchBatchRead)
// and sizes each fetch, at the compression ratio and record size of the
// batches read lately:
//
//   - a fetch decompresses to at most its share of the byte limit;
//   - it holds its share of the record limit, or minRecordFetch bytes on
//     the wire when those hold more records (never more than the byte
//     share): every fetch costs the broker and the client a request's
//     work whatever it carries, and with small records the record share
//     alone (100 B records: about 60 KiB on the wire at the default limit)
//     is a few batches, and fetches of it are 80 times as many as kgo's
//     defaults make;
//   - one partition's part of it (FetchMaxPartitionBytes) holds at most
//     records/fetchShare records, below the runtime's default partition
//     queue (pipeline.DefaultPartitionQueue): a fetch that fills a
//     partition's queue gets it paused, and kgo drops the rest of a paused
//     partition's buffered records, to be fetched again on resume. A
//     broker answers with whole batches (at least one whatever the
//     limits), so a partition's part is at least its next batch, however
//     many records that holds; pause.go says how the source keeps such a
//     part from being stripped.
//
// Until the first batch is read a fetch asks for one byte: a broker
// answers with one batch (always at least one, whatever the limits).
const (
	// fetchShare is the share of each in-flight limit kgo's buffered and
	// in-flight fetches may hold: budget/fetchShare bytes (decompressed;
	// between minFetchTotal and the most maxConcurrentFetches fetches of
	// kgo's default size hold on the wire) and records/fetchShare records
	// (or minRecordFetch bytes on the wire per fetch, when more).
	fetchShare = 8
	// maxConcurrentFetches caps the fetches in flight or buffered across
	// all brokers (kgo.MaxConcurrentFetches; kgo's default is one per
	// broker, unbounded); each gets an equal part of the total.
	maxConcurrentFetches = 4
	// minFetchTotal keeps tiny budgets fetching more than a batch at a
	// time.
	minFetchTotal = 256 << 10
	// kgoFetchMaxBytes and kgoFetchMaxPartitionBytes are kgo's defaults
	// (kgo.FetchMaxBytes, kgo.FetchMaxPartitionBytes): the sizes never
	// grow past them.
	kgoFetchMaxBytes          = 50 << 20
	kgoFetchMaxPartitionBytes = 1 << 20
	// minRecordFetch is the least the record share lowers a fetch to, in
	// bytes on the wire: kgo's default per partition. The byte share
	// (maxBytes, and what decompresses to it) still caps the fetch.
	minRecordFetch = kgoFetchMaxPartitionBytes
	// batchDecay weighs the batches read in fetchSizer's averages: each
	// new batch counts 1/batchDecay.
	batchDecay = 16
)

// budgetOf returns g's in-flight byte budget (Group.MaxInFlightBytes), or
// pipeline.DefaultMaxInFlightBytes for a Group that tells none.
func budgetOf(g sluice.Group) int64 {
	if b := g.MaxInFlightBytes(); b > 0 {
		return b
	}
	return pipeline.DefaultMaxInFlightBytes
}

// recordsOf returns g's in-flight record limit (Group.MaxInFlight), or
// pipeline.DefaultMaxInFlight for a Group that tells none.
func recordsOf(g sluice.Group) int {
	if n := g.MaxInFlight(); n > 0 {
		return n
	}
	return pipeline.DefaultMaxInFlight
}

// fetchSizes returns kgo.FetchMaxBytes, kgo.FetchMaxPartitionBytes and
// kgo.MaxConcurrentFetches for an in-flight byte budget: at most
// maxConcurrentFetches fetches of at most budget/fetchShare bytes in all.
// They are the most a fetch asks for (fetchSizer asks for less).
func fetchSizes(budget int64) (maxBytes, maxPartBytes int32, concurrent int) {
	total := min(max(budget/fetchShare, minFetchTotal), maxConcurrentFetches*kgoFetchMaxBytes)
	maxBytes = int32(total / maxConcurrentFetches)
	return maxBytes, min(maxBytes, kgoFetchMaxPartitionBytes), maxConcurrentFetches
}

// fetchSizer is the kgo hook that sizes the fetches of one Run from what
// the batches read decompress to. Its sizes never exceed fetchSizes';
// it changes nothing when Config.Opts set kgo.FetchMaxBytes or
// kgo.FetchMaxPartitionBytes (start sees them).
type fetchSizer struct {
	maxBytes, maxPartBytes int32   // fetchSizes(budget): the ceiling
	perFetchRecords        float64 // records/fetchShare/maxConcurrentFetches, at least 1
	perPartRecords         float64 // records/fetchShare, at least 1

	cl atomic.Pointer[kgo.Client] // set by start when the sizes are the source's

	mu sync.Mutex
	// Decaying sums over the batches read (each new one counts
	// 1/batchDecay): bytes decompressed, bytes on the wire, records.
	uncompressed, compressed, records float64
	cur, curPart                      int32 // FetchMaxBytes, FetchMaxPartitionBytes asked for now
}

var _ kgo.HookFetchBatchRead = (*fetchSizer)(nil)

func newFetchSizer(budget int64, records int) *fetchSizer {
	maxBytes, maxPartBytes, _ := fetchSizes(budget)
	return &fetchSizer{maxBytes: maxBytes, maxPartBytes: maxPartBytes,
		perFetchRecords: max(1, float64(records)/fetchShare/maxConcurrentFetches),
		perPartRecords:  max(1, float64(records)/fetchShare)}
}

// opts returns the kgo options of fetchSizes and the hook; they come
// before Config.Opts, which may change them.
func (f *fetchSizer) opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.FetchMaxBytes(f.maxBytes),
		kgo.FetchMaxPartitionBytes(f.maxPartBytes),
		kgo.MaxConcurrentFetches(maxConcurrentFetches),
		kgo.WithHooks(f),
	}
}

// start makes f size cl's fetches, starting at one byte (one batch),
// unless Config.Opts set the fetch sizes. Call it before the client
// fetches (it fetches once it joined the group).
func (f *fetchSizer) start(cl *kgo.Client) {
	if cl.OptValue(kgo.FetchMaxBytes) != f.maxBytes || cl.OptValue(kgo.FetchMaxPartitionBytes) != f.maxPartBytes {
		return // the user's
	}
	f.cur, f.curPart = 1, 1
	cl.UpdateFetchMaxBytes(1, 1)
	f.cl.Store(cl)
}

// OnFetchBatchRead implements kgo.HookFetchBatchRead: it adds the batch
// to the averages and resizes the fetches to come. kgo calls it while it
// processes a fetch answer, before it buffers the answer, so the next
// fetch (issued once this one was taken) has the new sizes.
func (f *fetchSizer) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	cl := f.cl.Load()
	if cl == nil || m.NumRecords == 0 || m.CompressedBytes == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	const keep = 1 - 1.0/batchDecay
	f.uncompressed = f.uncompressed*keep + float64(m.UncompressedBytes)
	f.compressed = f.compressed*keep + float64(m.CompressedBytes)
	f.records = f.records*keep + float64(m.NumRecords)
	if n, p := f.size(); n != f.cur || p != f.curPart {
		f.cur, f.curPart = n, p
		cl.UpdateFetchMaxBytes(n, p)
	}
}

// size returns FetchMaxBytes and FetchMaxPartitionBytes for the
// averages. FetchMaxBytes: what holds perFetchRecords records, or
// minRecordFetch if that is more; no more than what decompresses to
// maxBytes, nor maxBytes. FetchMaxPartitionBytes: what holds
// perPartRecords records, no more than FetchMaxBytes and maxPartBytes.
// Both are at least one. Callers hold mu.
func (f *fetchSizer) size() (maxBytes, maxPartBytes int32) {
	wirePerRecord := f.compressed / f.records
	byBytes := float64(f.maxBytes) * f.compressed / f.uncompressed
	byRecords := max(f.perFetchRecords*wirePerRecord, minRecordFetch)
	n := max(1, min(float64(f.maxBytes), byBytes, byRecords))
	part := max(1, min(n, float64(f.maxPartBytes), f.perPartRecords*wirePerRecord))
	return int32(n), int32(part)
}
