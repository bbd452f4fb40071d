package franz

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/rebalance"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultMaxDeliveries is the ShareConfig.MaxDeliveries used when it is
// zero: one below Kafka's default group.share.delivery.count.limit (5), so
// that the record's last delivery reaches the dead-letter destination
// instead of being archived by the broker unseen.
const DefaultMaxDeliveries = 4

// ShareConfig configures a [ShareSource]. Brokers, Group and Topics are
// required; everything else has a default. NewShareSource copies it.
type ShareConfig struct {
	// Brokers is the bootstrap list, host:port each (kgo.SeedBrokers).
	Brokers []string

	// Group is the share group id (kgo.ShareGroup). Where a new group
	// starts reading is the group config share.auto.offset.reset
	// (latest unless set to earliest, with IncrementalAlterConfigs on
	// the GROUP resource, e.g. kafka-configs.sh --entity-type groups).
	Group string

	// Topics are the topics to consume (kgo.ConsumeTopics), by exact name.
	Topics []string

	// MaxDeliveries is how many times one record may run through the
	// graph. A record whose broker delivery count (kgo
	// Record.DeliveryCount, kept by the broker across members and
	// restarts) exceeds it is handed to the dead-letter destination
	// without running the graph (stage sluice.MaxDeliveriesStage), or
	// rejected when Run has none. It must be below the broker's
	// group.share.delivery.count.limit (Kafka and kfake default 5): at the
	// broker's limit the broker archives the record itself and the
	// dead-letter destination never sees it. Zero means
	// DefaultMaxDeliveries; it must not be negative.
	MaxDeliveries int

	// CloseTimeout bounds what the source does past the runtime's drain
	// when it stops: flushing the last acknowledgements takes its first
	// 40%, leaving the share group and closing the client the rest. Zero
	// means DefaultCloseTimeout; it must not be negative, and a non-zero
	// value must be at least 100ms.
	CloseTimeout time.Duration

	// Logger receives franz-go's logs and the source's own events. Nil
	// discards them.
	Logger *slog.Logger

	// Opts are passed to kgo.NewClient after the source's defaults (TLS,
	// SASL, kgo.ShareMaxRecords to size one poll, ...). Kafka takes
	// kgo.ShareMaxRecords as a hint and acquires whole producer batches
	// for a fetch; add kgo.ShareMaxRecordsStrict to bound what one fetch
	// acquires to kgo.ShareMaxRecords records (see docs/share.md). The
	// options the source sets itself are refused by NewShareSource with an
	// error naming them; so are the options kgo refuses for a share group
	// (consumer group, auto-commit and partition callback options).
	Opts []kgo.Opt

	// SkipTopicCheck turns off the check Run makes before it joins the
	// share group: that every topic of Topics exists. A missing topic is
	// otherwise an error naming it (wrapping sluice.ErrMissingTopic).
	// Set it when the topics are created after the consumer starts. A
	// cluster that does not answer the check within 10s is no error: the
	// check is logged and skipped.
	SkipTopicCheck bool
}

// validate checks the fields; the errors name them.
func (c ShareConfig) validate() error {
	// The fields shared with Config have the same rules.
	base := Config{GroupConfig: sluice.GroupConfig{Brokers: c.Brokers, Group: c.Group, Topics: c.Topics, CloseTimeout: c.CloseTimeout}, Opts: c.Opts}
	if err := base.validate(); err != nil {
		return fmt.Errorf("%s", strings.Replace(err.Error(), "franz: Config.", "franz: ShareConfig.", 1))
	}
	if c.MaxDeliveries < 0 {
		return fmt.Errorf("franz: ShareConfig.MaxDeliveries = %d: must not be negative (0 means %d)", c.MaxDeliveries, DefaultMaxDeliveries)
	}
	return nil
}

func (c ShareConfig) maxDeliveries() int32 {
	if c.MaxDeliveries == 0 {
		return DefaultMaxDeliveries
	}
	return int32(min(c.MaxDeliveries, 1<<30))
}

func (c ShareConfig) closeTimeout() time.Duration {
	return rebalance.CloseTimeoutOrDefault(c.CloseTimeout)
}

// shareReservedOpts lists the options NewShareSource refuses in
// ShareConfig.Opts.
var shareReservedOpts = []reservedOpt{
	{kgo.SeedBrokers, "use ShareConfig.Brokers"},
	{kgo.ShareGroup, "use ShareConfig.Group"},
	{kgo.ConsumeTopics, "use ShareConfig.Topics"},
	{kgo.ConsumeRegex, "ShareConfig.Topics are exact names"},
	{kgo.ShareAckCallback, "the source acknowledges records itself and logs failed acknowledgements"},
	{kgo.WithLogger, "use ShareConfig.Logger"},
}

// checkShareOpts applies opts to a probe share client (which neither dials
// nor joins without topics) and returns kgo's validation error or an error
// naming the first reserved option set.
func checkShareOpts(opts []kgo.Opt) error {
	// A name no ShareConfig.Group can be (whitespace), so that a user's
	// kgo.ShareGroup differs.
	return checkReserved("ShareConfig.Opts", []kgo.Opt{kgo.ShareGroup(" sluice probe ")}, opts, shareReservedOpts)
}
