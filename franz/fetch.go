package franz

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/pipeline"
)

// The source sizes kgo's prefetch from the runtime's in-flight byte
// budget, so that what kgo fetched and the runtime has not admitted yet
// is a fraction of the budget (in bytes on the wire) plus a constant,
// however many partitions the source owns. kgo issues at most one fetch
// per broker at a time and keeps its answer buffered until a poll took
// it; a poll hands every record it got to the runtime (Group.Deliver
// accepts the records polled for a partition it asked to pause), so one
// poll overshoots the budget by at most the fetches it took. Taking fewer
// records per poll (PollRecords with a limit) bounds that too, but kgo
// then drops the buffered rest of a partition paused meanwhile and
// fetches and decompresses it again: on the embedded broker (graph (b),
// 8 partitions, 16 MiB budget) that cost 4x the throughput for nothing
// the fetch sizes do not already bound.
const (
	// fetchShare is the share of the budget kgo's buffered and in-flight
	// fetches may hold, in bytes on the wire (compressed batches take more
	// once decompressed): budget/fetchShare, between minFetchTotal and
	// the most maxConcurrentFetches fetches of kgo's default size hold.
	fetchShare = 8
	// maxConcurrentFetches caps the fetches in flight or buffered across
	// all brokers (kgo.MaxConcurrentFetches; kgo's default is one per
	// broker, unbounded); each gets an equal part of the total.
	maxConcurrentFetches = 4
	// minFetchTotal keeps tiny budgets fetching: brokers still return a
	// batch larger than the request's limit, so progress never stalls.
	minFetchTotal = 256 << 10
	// kgoFetchMaxBytes and kgoFetchMaxPartitionBytes are kgo's defaults
	// (kgo.FetchMaxBytes, kgo.FetchMaxPartitionBytes): the sizes never
	// grow past them.
	kgoFetchMaxBytes          = 50 << 20
	kgoFetchMaxPartitionBytes = 1 << 20
)

// budgetOf returns g's in-flight byte budget (Group.MaxInFlightBytes), or
// pipeline.DefaultMaxInFlightBytes for a Group that tells none.
func budgetOf(g pipeline.Group) int64 {
	if b := g.MaxInFlightBytes(); b > 0 {
		return b
	}
	return pipeline.DefaultMaxInFlightBytes
}

// fetchSizes returns kgo.FetchMaxBytes, kgo.FetchMaxPartitionBytes and
// kgo.MaxConcurrentFetches for an in-flight byte budget: at most
// maxConcurrentFetches fetches of at most budget/fetchShare bytes in all.
func fetchSizes(budget int64) (maxBytes, maxPartBytes int32, concurrent int) {
	total := min(max(budget/fetchShare, minFetchTotal), maxConcurrentFetches*kgoFetchMaxBytes)
	maxBytes = int32(total / maxConcurrentFetches)
	return maxBytes, min(maxBytes, kgoFetchMaxPartitionBytes), maxConcurrentFetches
}

// fetchOpts returns the kgo options of fetchSizes(budget); they come
// before Config.Opts, which may change them.
func fetchOpts(budget int64) []kgo.Opt {
	maxBytes, maxPartBytes, concurrent := fetchSizes(budget)
	return []kgo.Opt{
		kgo.FetchMaxBytes(maxBytes),
		kgo.FetchMaxPartitionBytes(maxPartBytes),
		kgo.MaxConcurrentFetches(concurrent),
	}
}
