package rebalance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice-go/sluice"
)

// ClaimTimeout bounds one call of the OffsetStore's Claim at an
// assignment: the rebalance waits for it (both clients' default
// rebalance timeouts leave room for it next to a revoke's drain and
// commit).
const ClaimTimeout = 15 * time.Second

// Claim asks the offset store of Options (if any) where the partitions of
// tps this member does not own yet start, before the backend hands them
// to its client and calls Assigned. It returns nil without a store, when
// closing, or when every partition of tps is owned already. The error
// names the store, the group and the partitions; a backend makes it
// fatal (Run stops with it) and still answers its client. A reply with a
// negative offset, or with an offset for a partition the store was not
// asked to claim, is such an error too.
func (c *Core) Claim(tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	if c.o.OffsetStore == nil || c.closing {
		return nil, nil
	}
	var fresh []sluice.TopicPartition
	for _, tp := range tps {
		if !c.owned[tp] {
			fresh = append(fresh, tp)
		}
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ClaimTimeout)
	defer cancel()
	start, err := c.o.OffsetStore.Claim(ctx, c.o.Group, fresh)
	if err != nil {
		return nil, fmt.Errorf("%s: Config.OffsetStore: claim of %s for group %q: %w", c.o.Prefix, tpList(fresh), c.o.Group, err)
	}
	for tp, off := range start {
		switch {
		case !slices.Contains(fresh, tp):
			return nil, fmt.Errorf("%s: Config.OffsetStore: claim of %s for group %q returned an offset for %s[%d], which it was not asked to claim",
				c.o.Prefix, tpList(fresh), c.o.Group, tp.Topic, tp.Partition)
		case off < 0:
			return nil, fmt.Errorf("%s: Config.OffsetStore: claim returned offset %d for %s[%d]: a start offset is 0 or more (leave a partition out to start at the group's offset)", c.o.Prefix, off, tp.Topic, tp.Partition)
		}
	}
	c.log.Info("partitions claimed from the offset store", "partitions", fresh, "start", start)
	return start, nil
}

// tpList names partitions as "topic[partition]", comma separated, for
// errors.
func tpList(tps []sluice.TopicPartition) string {
	names := make([]string, len(tps))
	for i, tp := range tps {
		names[i] = fmt.Sprintf("%s[%d]", tp.Topic, tp.Partition)
	}
	return strings.Join(names, ", ")
}

// CheckExactlyOnce refuses an offset store together with a transactional
// producer (bound reports one): both decide where partitions resume and
// when their offsets count, so a source serves one of them. Backends call
// it at the start of Run.
func (s Settings) CheckExactlyOnce(bound bool) error {
	if bound && s.OffsetStore != nil {
		return fmt.Errorf("%s: Config.OffsetStore is set and a transactional producer is bound to the source: use one exactly-once mode (a database's offsets or Kafka transactions)", s.Prefix)
	}
	return nil
}
