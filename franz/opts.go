package franz

import (
	"fmt"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// reservedOpt is a kgo option the source sets itself and relies on: a
// user's Opts must leave it at kgo's default.
type reservedOpt struct {
	opt any    // the kgo option function, as OptValue takes it
	why string // the reason, in the error
}

// reservedOpts lists the options NewSource refuses in Config.Opts.
var reservedOpts = []reservedOpt{
	{kgo.SeedBrokers, "use Config.Brokers"},
	{kgo.ConsumerGroup, "use Config.Group"},
	{kgo.ConsumeTopics, "use Config.Topics"},
	{kgo.ConsumeRegex, "Config.Topics are exact names"},
	{kgo.ConsumePartitions, "the source consumes through its consumer group only"},
	{kgo.ShareGroup, "the source consumes through a classic or KIP-848 consumer group, not a share group"},
	{kgo.GroupProtocol, "the source needs the \"consumer\" join protocol"},
	{kgo.DisableAutoCommit, "the source always disables auto-commit and commits the offsets the runtime reports itself"},
	{kgo.AutoCommitInterval, "use Config.CommitInterval (kgo's auto-commit is off)"},
	{kgo.AutoCommitMarks, "kgo's auto-commit is off: the source commits the offsets the runtime reports"},
	{kgo.GreedyAutoCommit, "kgo's auto-commit is off: the source commits the offsets the runtime reports"},
	{kgo.AutoCommitCallback, "kgo's auto-commit is off; commit outcomes reach pipeline hooks (OnCommitted)"},
	{kgo.OnPartitionsAssigned, "the source handles rebalances (use pipeline hooks to observe them)"},
	{kgo.OnPartitionsRevoked, "the source handles rebalances: it drains and commits revoked partitions"},
	{kgo.OnPartitionsLost, "the source handles rebalances: it cancels lost partitions"},
	{kgo.OnPartitionsCallbackBlocked, "the source handles rebalances"},
	{kgo.BlockRebalanceOnPoll, "the source serves rebalances on its poll loop itself; blocking polls would deadlock it"},
	{kgo.AdjustFetchOffsetsFn, "partitions start at the group's committed offsets, which the runtime's commits rely on"},
	{kgo.WithLogger, "use Config.Logger"},
}

// userTimeouts are the group timeouts found in Config.Opts (zero: not set).
type userTimeouts struct {
	session, rebalance, heartbeat time.Duration
}

// checkOpts applies opts to a probe client (kgo.NewClient only validates
// and allocates; it dials nothing before a request) and compares each
// reserved option with kgo's default. It returns an error naming the first
// reserved option set, or kgo's own validation error, and the group
// timeouts opts set.
func checkOpts(opts []kgo.Opt) (userTimeouts, error) {
	var ut userTimeouts
	if len(opts) == 0 {
		return ut, nil
	}
	def, err := kgo.NewClient() // kgo's defaults, read back with OptValue
	if err != nil {
		return ut, fmt.Errorf("franz: kgo defaults: %w", err)
	}
	defer def.Close()
	probe, err := kgo.NewClient(opts...)
	if err != nil {
		return ut, fmt.Errorf("franz: Config.Opts: %w", err)
	}
	defer probe.Close()
	for _, r := range reservedOpts {
		if !sameValues(probe.OptValues(r.opt), def.OptValues(r.opt)) {
			return ut, fmt.Errorf("franz: Config.Opts: kgo.%s cannot be set: %s", optName(r.opt), r.why)
		}
	}
	read := func(opt any) time.Duration {
		v, _ := probe.OptValue(opt).(time.Duration)
		if d, _ := def.OptValue(opt).(time.Duration); v == d {
			return 0 // kgo's default: not set (or set to it, which is the same to kgo)
		}
		return v
	}
	ut.session = read(kgo.SessionTimeout)
	ut.rebalance = read(kgo.RebalanceTimeout)
	ut.heartbeat = read(kgo.HeartbeatInterval)
	return ut, nil
}

// sameValues compares option values read back by OptValues. Functions are
// equal when both are nil (a set callback is never kgo's default).
func sameValues(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		va, vb := reflect.ValueOf(a[i]), reflect.ValueOf(b[i])
		if va.Kind() == reflect.Func || vb.Kind() == reflect.Func {
			if !(isNil(va) && isNil(vb)) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(a[i], b[i]) && !(isEmpty(va) && isEmpty(vb)) {
			return false
		}
	}
	return true
}

func isNil(v reflect.Value) bool { return !v.IsValid() || v.IsNil() }

// isEmpty treats nil and empty slices and maps alike.
func isEmpty(v reflect.Value) bool {
	if !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// optName returns the name of a kgo option function ("ConsumerGroup").
func optName(opt any) string {
	name := fmt.Sprintf("%T", opt)
	if fn := runtimeFuncName(opt); fn != "" {
		name = fn
	}
	return name
}
