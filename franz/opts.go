package franz

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
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
	{kgo.OnPartitionsCallbackBlocked, "the source handles rebalances"},
	{kgo.BlockRebalanceOnPoll, "the source serves rebalances on its poll loop itself; blocking polls would deadlock it"},
	{kgo.AdjustFetchOffsetsFn, "the source sets it: partitions start at the group's committed offsets, or where Config.OffsetStore says"},
	{kgo.WithLogger, "use Config.Logger"},
	{kgo.WithPools, "the source pools kgo's record slices itself and recycles each record as it takes it, while the record's bytes stay in use in the graphs: a pool of decompressed bytes would hand them to later fetches"},
}

// userTimeouts are the group timeouts found in Config.Opts (zero: not set).
type userTimeouts struct {
	session, rebalance, heartbeat time.Duration
}

// checkOpts applies opts to a probe client (kgo.NewClient only validates
// and allocates; without topics it neither dials nor joins) and compares
// each reserved option with kgo's default. It returns an error naming the
// first reserved option set, or kgo's own validation error, and the group
// timeouts opts set.
func checkOpts(opts []kgo.Opt) (userTimeouts, error) {
	var ut userTimeouts
	if len(opts) == 0 {
		return ut, nil
	}
	// kgo refuses group options without a group: both probes get one, a
	// name no Config.Group can be (whitespace), so a user's
	// kgo.ConsumerGroup still differs.
	base := kgo.ConsumerGroup(" sluice probe ")
	def, probe, err := probes([]kgo.Opt{base}, opts)
	if err != nil {
		// Options kgo refuses together with a group (ConsumePartitions,
		// ShareGroup) are named by a probe without one.
		if def2, probe2, err2 := probes(nil, opts); err2 == nil {
			rerr := reserved(def2, probe2)
			def2.Close()
			probe2.Close()
			if rerr != nil {
				return ut, rerr
			}
		}
		return ut, fmt.Errorf("franz: Config.Opts: %w", err)
	}
	defer def.Close()
	defer probe.Close()
	if err := reserved(def, probe); err != nil {
		return ut, err
	}
	if err := rebalanceCallbacks(opts); err != nil {
		return ut, err
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

// probes returns a client with base (kgo's defaults) and one with base and
// opts.
func probes(base, opts []kgo.Opt) (def, probe *kgo.Client, err error) {
	def, err = kgo.NewClient(base...)
	if err != nil {
		return nil, nil, err
	}
	probe, err = kgo.NewClient(append(slices.Clone(base), opts...)...)
	if err != nil {
		def.Close()
		return nil, nil, err
	}
	return def, probe, nil
}

// reserved returns an error naming the first of reservedOpts whose value
// differs between def and probe.
func reserved(def, probe *kgo.Client) error {
	return firstReserved("Config.Opts", def, probe, reservedOpts)
}

// firstReserved returns an error naming the first option of list whose
// value differs between def (kgo's defaults) and probe (field's options
// applied), as "franz: <field>: kgo.<Option> cannot be set: <why>", or nil.
func firstReserved(field string, def, probe *kgo.Client, list []reservedOpt) error {
	for _, r := range list {
		if !sameValues(probe.OptValues(r.opt), def.OptValues(r.opt)) {
			return fmt.Errorf("franz: %s: kgo.%s cannot be set: %s", field, optName(r.opt), r.why)
		}
	}
	return nil
}

// checkReserved applies opts after base to a probe client (kgo.NewClient
// only validates and allocates: without topics it neither dials nor
// consumes) and compares each option of list with its value under base
// alone. It returns kgo's own validation error or an error naming the
// first option of list that opts set, both prefixed with field; nil when
// opts is empty. The producer, the share source and the leaders client
// check their Opts with it.
func checkReserved(field string, base, opts []kgo.Opt, list []reservedOpt) error {
	if len(opts) == 0 {
		return nil
	}
	def, probe, err := probes(base, opts)
	if err != nil {
		return fmt.Errorf("franz: %s: %w", field, err)
	}
	defer def.Close()
	defer probe.Close()
	return firstReserved(field, def, probe, list)
}

// rebalanceCallbacks refuses kgo.OnPartitionsAssigned, OnPartitionsRevoked
// and OnPartitionsLost, which OptValues cannot tell from kgo's defaults
// once a group is set (kgo wraps every one of them in a logging function).
// Without a group kgo refuses exactly these three with one error
// (config.go, validate): each opt is applied alone to a client without a
// group and that error is recognised.
func rebalanceCallbacks(opts []kgo.Opt) error {
	for i, o := range opts {
		cl, err := kgo.NewClient(o)
		if err == nil {
			cl.Close()
			continue
		}
		if strings.Contains(err.Error(), "assigned/revoked/lost") {
			return fmt.Errorf("franz: Config.Opts[%d]: kgo.OnPartitionsAssigned, kgo.OnPartitionsRevoked and kgo.OnPartitionsLost cannot be set: "+
				"the source handles rebalances (it drains and commits revoked partitions, cancels lost ones; use pipeline hooks to observe them)", i)
		}
	}
	return nil
}

// sameValues compares option values read back by OptValues. Functions are
// equal when both are nil or have the same code (kgo's default callbacks
// are its own functions, never the user's).
func sameValues(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		va, vb := reflect.ValueOf(a[i]), reflect.ValueOf(b[i])
		if va.Kind() == reflect.Func || vb.Kind() == reflect.Func {
			if isNil(va) != isNil(vb) || (!isNil(va) && va.Pointer() != vb.Pointer()) {
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
