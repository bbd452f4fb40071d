package kafkatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CommitContext commits offsets (by partition) of topic for group, as an
// operator's tool does: outside any membership, so the group must have
// no member then (the broker refuses the commit otherwise). It asks
// again while the group's coordinator answers a retriable error (on
// Apache Kafka it is not ready until the offsets topic is), until ctx
// ends.
func (b *Broker) CommitContext(ctx context.Context, group, topic string, offsets map[int32]int64) error {
	adm, err := b.Admin()
	if err != nil {
		return err
	}
	var os kadm.Offsets
	for p, at := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	for {
		err = adm.CommitAllOffsets(ctx, group, os)
		if err == nil || !kerr.IsRetriable(err) {
			break
		}
		select {
		case <-ctx.Done():
			err = fmt.Errorf("%w (still at %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
			continue
		}
		break
	}
	if err != nil {
		return fmt.Errorf("kafkatest: commit offsets of group %q on %q: %w", group, topic, err)
	}
	return nil
}

// Commit is CommitContext for tests: it fails the test on error and gives
// up after a minute.
func (b *Broker) Commit(t testing.TB, group, topic string, offsets map[int32]int64) {
	t.Helper()
	mustWithinAMinute(t, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.CommitContext(ctx, group, topic, offsets)
	})
}

// SetGroupConfigContext sets the group config name of group to value
// (IncrementalAlterConfigs on the GROUP resource, as kafka-configs.sh
// --entity-type groups --alter does), for example a share group's
// share.auto.offset.reset to "earliest" before its first start, so that
// it reads what was produced before it existed. The group need not exist
// yet.
func (b *Broker) SetGroupConfigContext(ctx context.Context, group, name, value string) error {
	cl, err := b.client(&b.adm)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		for _, r := range resp.Resources {
			if err = kerr.ErrorForCode(r.ErrorCode); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("kafkatest: set %s of group %q: %w", name, group, err)
	}
	return nil
}

// SetGroupConfig is SetGroupConfigContext for tests: it fails the test on
// error and gives up after a minute.
func (b *Broker) SetGroupConfig(t testing.TB, group, name, value string) {
	t.Helper()
	mustWithinAMinute(t, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.SetGroupConfigContext(ctx, group, name, value)
	})
}
