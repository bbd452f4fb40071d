package franz

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/internal/exactlyonce"
	"github.com/sluice-go/sluice/sink"
)

// DefaultTransactionTimeout is the kgo.TransactionTimeout of a
// transactional producer unless its TransactionTimeout says otherwise; it
// equals sink.DefaultTransactionTimeout.
const DefaultTransactionTimeout = sink.DefaultTransactionTimeout

// TransactionalConfig configures [NewTransactionalProducer]: franz-go's
// [ProducerConfig] and the client-independent [sink.TransactionConfig]
// (see its fields' contracts), whose fields it promotes; errors name them
// as TransactionalConfig.<Field>.
//
// With franz-go, TransactionalID and TransactionTimeout are
// kgo.TransactionalID and kgo.TransactionTimeout, which Opts may not set;
// TransactionTimeout must be at least 1ms (kgo counts it in
// milliseconds), and a zero ProducerConfig.DeliveryTimeout becomes the
// shorter of TransactionTimeout and DefaultDeliveryTimeout.
// CommitTimeout bounds kgo's InitProducerID at Run's start, retries
// included: past it, Run returns an error naming TransactionalID and the
// broker's last answer.
type TransactionalConfig struct {
	// ProducerConfig is validated as for [NewProducer], with two
	// differences, both because the producer shares the source's kgo
	// client (kgo commits a consumer's offsets in a transaction only on
	// the client that produces it): Brokers may be left empty (the
	// source's Config.Brokers are used; if set they must be the same
	// brokers), and Opts go to that shared client after the source's
	// Config.Opts, so they may set producer and client options only (a
	// consumer or group option is refused) and may not set
	// kgo.TransactionalID nor kgo.TransactionTimeout (use
	// TransactionConfig). The shared client logs to the source's
	// Config.Logger; ProducerConfig.Logger gets the producer's own
	// warnings.
	ProducerConfig

	// TransactionConfig is the client-independent half: TransactionalID,
	// TransactionTimeout and CommitTimeout, promoted
	// (cfg.TransactionalID).
	sink.TransactionConfig
}

// reservedTxnOpts are refused in TransactionalConfig's Opts with a reason
// of their own (before the plain producer's list, which refuses
// kgo.TransactionalID for another reason).
var reservedTxnOpts = []reservedOpt{
	{kgo.TransactionalID, "use TransactionalConfig.TransactionalID"},
	{kgo.TransactionTimeout, "use TransactionalConfig.TransactionTimeout"},
}

// validate checks cfg for the source src and returns it with Brokers and
// the timeouts filled in.
func (cfg TransactionalConfig) validate(src *Source) (TransactionalConfig, error) {
	if err := exactlyonce.CheckConfig("franz", cfg.TransactionConfig); err != nil {
		return cfg, err
	}
	cfg.TransactionTimeout = exactlyonce.TransactionTimeoutOrDefault(cfg.TransactionTimeout)
	if cfg.TransactionTimeout < time.Millisecond {
		return cfg, fmt.Errorf("franz: TransactionalConfig.TransactionTimeout = %v: kgo counts it in milliseconds, want at least 1ms", cfg.TransactionTimeout)
	}
	if cfg.DeliveryTimeout == 0 {
		cfg.DeliveryTimeout = min(cfg.TransactionTimeout, DefaultDeliveryTimeout)
	}
	switch {
	case len(cfg.Brokers) == 0:
		cfg.Brokers = slices.Clone(src.cfg.Brokers)
	case !sameBrokers(cfg.Brokers, src.cfg.Brokers):
		return cfg, fmt.Errorf("franz: TransactionalConfig.Brokers %v are not the source's Config.Brokers %v: the transactional producer shares the source's client (leave Brokers empty)",
			cfg.Brokers, src.cfg.Brokers)
	}
	if err := cfg.ProducerConfig.validate(); err != nil {
		return cfg, err
	}
	for i, o := range cfg.Opts {
		_, consumer := o.(kgo.ConsumerOpt)
		_, group := o.(kgo.GroupOpt)
		if consumer || group {
			return cfg, fmt.Errorf("franz: ProducerConfig.Opts[%d] is a consumer or group option (%T): the shared client's consumer is configured by the source's Config.Opts", i, o)
		}
	}
	if len(cfg.Opts) > 0 {
		def, probe, err := probes(nil, cfg.Opts)
		if err != nil {
			return cfg, fmt.Errorf("franz: ProducerConfig.Opts: %w", err)
		}
		defer def.Close()
		defer probe.Close()
		for _, r := range reservedTxnOpts {
			if !sameValues(probe.OptValues(r.opt), def.OptValues(r.opt)) {
				return cfg, fmt.Errorf("franz: ProducerConfig.Opts: kgo.%s cannot be set for a transactional producer: %s", optName(r.opt), r.why)
			}
		}
		if err := checkProducerOpts(cfg.Opts); err != nil {
			return cfg, err
		}
	}
	// The options are validated together, as the source's Run will create
	// the shared client: kgo refuses some combinations only then (a
	// transactional id with kgo.DisableIdempotentWrite, for one).
	all := append([]kgo.Opt{kgo.ConsumerGroup(" sluice probe ")}, src.cfg.Opts...)
	all = append(all, cfg.clientOpts()...)
	probe, err := kgo.NewClient(all...)
	if err != nil {
		return cfg, fmt.Errorf("franz: NewTransactionalProducer: the source's Config.Opts with the producer's options: %w", err)
	}
	probe.Close()
	return cfg, nil
}

// defaultClientOpts are the options the shared client gets before the
// source's Config.Opts: the producer's linger and metadata age
// (DefaultProducerMetadataMinAge), and read_committed input
// (as librdkafka's default), so that the transactional outputs of an
// upstream pipeline are read once committed, never when aborted.
func (cfg TransactionalConfig) defaultClientOpts() []kgo.Opt {
	return []kgo.Opt{kgo.ProducerLinger(DefaultProducerLinger), kgo.MetadataMinAge(DefaultProducerMetadataMinAge),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())}
}

// clientOpts are the options the shared client gets after the source's
// Config.Opts.
func (cfg TransactionalConfig) clientOpts() []kgo.Opt {
	opts := slices.Clone(cfg.Opts)
	return append(opts, kgo.TransactionalID(cfg.TransactionalID), kgo.TransactionTimeout(cfg.TransactionTimeout))
}

// sameBrokers reports whether a and b list the same brokers, in any order.
func sameBrokers(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
