package franz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/rebalance"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ShareSource is a [sluice.Source] consuming a Kafka share group
// (KIP-932) through franz-go: the records of its topics are handed to any
// member of the group and acknowledged one by one. Create it with
// [NewShareSource]; its Run may be called once. See docs/share.md for
// what it guarantees and what it costs.
//
// The user's builder and stages are those of a consumer group source;
// what changes is what "done" means for a record:
//   - its ticket completed (it reached an End or was filtered out):
//     acknowledged ACCEPT;
//   - invalid: dead-lettered, then ACCEPT; REJECT when Run has no
//     dead-letter destination (Run goes on);
//   - a stage's retries exhausted: RELEASE, for redelivery to any member
//     (logged as a warning; Run goes on instead of stopping);
//   - unfinished when the consumer shuts down, or when its graph failed:
//     RELEASE;
//   - delivered more than ShareConfig.MaxDeliveries times (the broker's
//     count, which survives restarts): dead-lettered without running the
//     graph, then ACCEPT (REJECT without a destination).
//
// One graph runs per topic-partition that delivered a record, built when
// its first record arrives and drained at shutdown. Records of one
// partition reach it in no particular offset order, and redelivered
// records come back with their old offsets.
//
// A topic deleted while Run consumes it (the broker no longer knows its
// topic ID) ends nothing: the graphs of its partitions are lost, the
// outcomes of its records cannot be acknowledged any more (logged as
// warnings naming the topic), and Run consumes the topic anew by name, so
// that once it is recreated its records reach new graphs, from where the
// share group starts on the new topic.
type ShareSource struct {
	cfg     ShareConfig
	log     *slog.Logger
	started atomic.Bool
	// background counts the goroutines of Close calls Run stopped
	// waiting for.
	background sync.WaitGroup
}

var _ sluice.Source = (*ShareSource)(nil)

// NewShareSource validates cfg and returns a share group source. Errors
// name the offending ShareConfig field, or the kgo option in
// ShareConfig.Opts that the source does not allow (with the reason) or
// that kgo rejects for a share group. It creates no connection.
func NewShareSource(cfg ShareConfig) (*ShareSource, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := checkShareOpts(cfg.Opts); err != nil {
		return nil, err
	}
	cfg.Brokers = slices.Clone(cfg.Brokers)
	cfg.Topics = slices.Clone(cfg.Topics)
	cfg.Opts = slices.Clone(cfg.Opts)
	return &ShareSource{cfg: cfg, log: rebalance.SourceLogger(cfg.Logger, "sluice/franz-share", cfg.Group)}, nil
}

// Run joins the share group, consumes ShareConfig.Topics and feeds the
// records to g until ctx is done; see [sluice.AckGroup] for the
// contract. g must be the Group of [pipeline.Run] (a sluice.AckGroup):
// anything else is an error, returned before any other call. So is a
// topic of ShareConfig.Topics that does not exist (checked before
// joining, unless ShareConfig.SkipTopicCheck; the error wraps
// sluice.ErrMissingTopic).
//
// Run polls a batch of records, delivers it and polls again only once
// every record of the batch has an outcome (kgo accepts, on each poll,
// every record of the previous one left unacknowledged); meanwhile it
// acknowledges outcomes as they come and renews the acquisition lock of
// the records held past half of it (AckRenew).
//
// When ctx is done Run drains the graphs (Group.Shutdown; the locks of
// the records still held keep being renewed meanwhile), acknowledges
// their outcomes, releases every record still unfinished, flushes the
// acknowledgements and closes the client (which leaves the group), each
// step bounded (see ShareConfig.CloseTimeout). It returns nil when all of
// them finished, else an error naming each step that did not. A second
// call returns an error.
func (s *ShareSource) Run(ctx context.Context, g sluice.Group) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("franz: ShareSource.Run called twice")
	}
	ag, ok := g.(sluice.AckGroup)
	if !ok {
		return fmt.Errorf("franz: ShareSource.Run needs the Group of pipeline.Run (a sluice.AckGroup), got %T", g)
	}
	if err := ag.TrackAcks(); err != nil {
		return fmt.Errorf("franz: ShareSource.Run: %w", err)
	}
	if !s.cfg.SkipTopicCheck {
		opts := probeOpts(s.cfg.Opts, s.cfg.Brokers, kgo.ShareGroup(s.cfg.Group))
		if err := checkInputTopics(ctx, s.log, "ShareConfig.Topics", "ShareConfig.SkipTopicCheck", s.cfg.Topics, opts); err != nil {
			return err
		}
	}
	r := newShareRunner(s, ag)
	opts := []kgo.Opt{kgo.FetchMaxWait(defaultFetchMaxWait)}
	opts = append(opts, s.cfg.Opts...)
	opts = append(opts,
		kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.ShareGroup(s.cfg.Group),
		kgo.ConsumeTopics(s.cfg.Topics...),
		kgo.ShareAckCallback(r.ackResults),
		kgo.WithLogger(slogAdapter{log: s.log}),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("franz: create share client: %w", err)
	}
	r.cl = cl
	r.anew = newConsumedAnew(cl)
	return r.run(ctx)
}
