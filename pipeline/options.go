package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/engine"
)

// Option configures [Run]. Options are applied in order; an invalid value
// makes Run return an error naming the option before anything starts.
type Option func(*config)

// config is what the options build: the engine's configuration, and the
// errors of invalid options.
type config struct {
	engine.Config
	errs []error
	// deadLetterCheck is the CheckStart of the dead-letter destination
	// when it implements StartChecker (see WithDeadLetter), or nil.
	deadLetterCheck func(context.Context) error
}

const (
	// DefaultDrainTimeout is how long a revoked partition may take to drain.
	DefaultDrainTimeout = 20 * time.Second
	// DefaultMaxInFlight bounds records delivered but not yet committable,
	// across all partitions.
	DefaultMaxInFlight = 100_000
	// DefaultMaxInFlightBytes bounds the bytes of those records: key and
	// value plus [RecordOverhead] each.
	DefaultMaxInFlightBytes = 256 << 20
	// RecordOverhead is what the runtime itself holds for each record in
	// flight, counted in the byte budget ([WithMaxInFlightBytes]) on top
	// of the record's key and value: the record's slot in its partition's
	// offset tracker and its copy in a chunk of the graph's input, 272
	// bytes on 64-bit platforms.
	RecordOverhead = engine.RecordOverhead
	// DefaultPartitionQueue is how many records one partition may hold
	// before it is paused. It is above what a graph of a few stages holds
	// in its edges alone (Map → Pool(8) → Batch(500) → Each: about 10,000
	// records), and above what a graph ending in sink.Produce holds with
	// the stage's outstanding deliveries (up to 16,384 messages awaiting
	// their reports, besides its edges), so that a pause means the graph
	// is really behind: a pause costs librdkafka the partition's
	// prefetched records, and kgo what it buffered of the partition beyond
	// the source's spare room, both fetched again on resume. The global
	// limits (WithMaxInFlight, WithMaxInFlightBytes) still cap memory.
	DefaultPartitionQueue = 32768
)

// chunkSize is the most values in one chunk on a graph's edges.
const chunkSize = 256

func defaultConfig() config {
	return config{Config: engine.Config{
		DrainTimeout:     DefaultDrainTimeout,
		MaxInFlight:      DefaultMaxInFlight,
		MaxInFlightBytes: DefaultMaxInFlightBytes,
		PartitionQueue:   DefaultPartitionQueue,
		Chunk:            chunkSize,
		Retry:            sluice.DefaultRetry(),
		DefaultRetry:     sluice.DefaultRetry(),
		Logger:           slog.Default(),
	}}
}

func (c *config) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("sluice: "+format, args...))
}

// positive is the Option that sets the field of config that field points
// to to v, and records an error naming the option (name(v): what must be
// positive) when v is not positive.
func positive[T ~int | ~int64](name, what string, v T, field func(*config) *T) Option {
	return func(c *config) {
		if v <= 0 {
			c.bad("%s(%v): %s must be positive", name, v, what)
		}
		*field(c) = v
	}
}

// WithDrainTimeout sets how long a revoked partition's graph may take to
// finish its in-flight records (default 20 s). Keep it well below the
// source's poll interval limit (Kafka's max.poll.interval.ms): the poll loop
// waits for the drain. After the timeout the partition context is cancelled
// and only what finished is committed; a function still running a quarter
// of the drain timeout later is abandoned and Run stops ([sluice.ErrAbandoned]).
//
// A drain finishes only what the graph was fed (records still queued for
// it are dropped, and fetched again by the next owner), and the runtime
// feeds a graph only what it finishes in half the drain timeout at its
// measured completion rate, so that a slow graph (a slow key in
// stages.PoolByKey) still drains in time. A drain that times out all the
// same logs that rate and what the graph held: the graph slowed down
// during the drain, or one record takes about the drain timeout; raise the
// drain timeout above the longest a record takes. See docs/lifecycle.md,
// "Pacing what a graph holds".
func WithDrainTimeout(d time.Duration) Option {
	return positive("WithDrainTimeout", "the drain timeout", d, func(c *config) *time.Duration { return &c.DrainTimeout })
}

// WithMaxInFlight caps the records in flight (admitted into the graphs
// and not yet committable) across all partitions (default 100,000),
// whatever the number of partitions: they never exceed records. A
// delivery that does not fit is admitted only in part; the rest waits,
// first come first served across partitions, and is admitted as records
// complete, while its partition is paused. Besides the records in flight,
// what waits is at most the delivery that paused each partition: the
// Kafka sources (package source, package franz) deliver at most 128
// records at a time and nothing more of a paused partition until it
// resumes, so the runtime holds at most records + 128 per partition. What
// their client returned for a partition after its pause the Kafka sources
// keep themselves until it resumes: franz.Source at most an eighth of
// records (at least 128), source.Source at most one record per paused
// partition. Their clients' prefetch is sized from the limits too; see
// docs/lifecycle.md, "Backpressure". Paused partitions resume in turn:
// only as many at once as the free budget has room for one delivery each.
// A limit of a few hundred records pauses source.Source's partitions all
// the time, and librdkafka fetches again what each pause threw away: in
// the project's churn test it moved a few thousand records a second
// (docs/production.md, "librdkafka's prefetch").
func WithMaxInFlight(records int) Option {
	return positive("WithMaxInFlight", "the limit", records, func(c *config) *int { return &c.MaxInFlight })
}

// WithMaxInFlightBytes caps the bytes of the records in flight across all
// partitions (default 256 MiB), like [WithMaxInFlight]: they never exceed
// n, except that a record heavier than n is admitted alone once no bytes
// are in flight. A record weighs its key and value plus [RecordOverhead]
// (272 bytes: what the runtime holds for it), so that n bounds the
// runtime's own memory too: with 100-byte values, a 16 MiB budget admits
// about 45,000 records. Besides, what waits for admission is at most the
// delivery that paused each partition, which the Kafka sources keep
// within n/8 bytes (or one record heavier than that); franz.Source holds
// about n/8 more for paused partitions (it takes nothing from its client
// while it holds that much), source.Source one record per paused
// partition. What stages build from records (decoded values, batches) is
// not counted, nor the clients' prefetch, which the Kafka sources size
// from n: franz-go's fetches decompress to about n/8 in all (at the
// compression ratio of the batches read lately, and at least one batch
// per fetch), librdkafka's queue holds n/256 of keys and values (at least
// 1 MiB) plus a fetch response per broker. See docs/lifecycle.md, "Backpressure".
func WithMaxInFlightBytes(n int64) Option {
	return positive("WithMaxInFlightBytes", "the limit", n, func(c *config) *int64 { return &c.MaxInFlightBytes })
}

// WithPartitionQueue sets how many records one partition may hold
// (admitted, not yet committable) before the source pauses it (default
// [DefaultPartitionQueue], 32768). The delivery that reaches the limit is
// admitted whole, so a partition holds at most records plus one delivery,
// minus one. It resumes
// when half of them completed (and the global budget has room, see
// [WithMaxInFlight]). Records queued for a graph are not drained at a
// revoke (they are dropped, and fetched again by the next owner): what the
// graph was fed is, and that is paced to the drain timeout (see
// [WithDrainTimeout]), so this limit does not lengthen drains.
func WithPartitionQueue(records int) Option {
	return positive("WithPartitionQueue", "the limit", records, func(c *config) *int { return &c.PartitionQueue })
}

// WithLogger sets the logger for assignment, revocation, drain, retries,
// stuck values and errors. The default is slog.Default() as it is when
// Run starts: the warnings that show a misuse (every retry of a failing
// call, a stuck value) are meant to be seen. Pass
// slog.New(slog.DiscardHandler) for none. The Kafka clients have their
// own Logger fields (source.Config.Logger, ...), which discard when nil.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.bad("WithLogger(nil): pass a logger")
			return
		}
		c.Logger = l
	}
}
