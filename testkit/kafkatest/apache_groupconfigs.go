//go:build linux

package kafkatest

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deleteGroupConfigs removes every dynamic group config (such as a share
// group's share.auto.offset.reset). Kafka keeps a group's configs when the
// group is deleted, and for names that never were a group, so the next
// test's group of the same name would start with them.
func (c *apacheCluster) deleteGroupConfigs(ctx context.Context) error {
	lreq := kmsg.NewPtrListConfigResourcesRequest()
	lreq.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeGroupConfig)}
	ls, err := lreq.RequestWith(ctx, c.cl)
	if err == nil {
		err = kerr.ErrorForCode(ls.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("list group configs: %w", err)
	}
	if len(ls.ConfigResources) == 0 {
		return nil
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range ls.ConfigResources {
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, r.Name
		dreq.Resources = append(dreq.Resources, dr)
	}
	ds, err := dreq.RequestWith(ctx, c.cl)
	if err != nil {
		return fmt.Errorf("describe group configs: %w", err)
	}
	areq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, r := range ds.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("describe configs of group %q: %w", r.ResourceName, err)
		}
		ar := kmsg.NewIncrementalAlterConfigsRequestResource()
		ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeGroupConfig, r.ResourceName
		for _, cfg := range r.Configs {
			if cfg.Source == kmsg.ConfigSourceGroupConfig {
				ac := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				ac.Name, ac.Op = cfg.Name, kmsg.IncrementalAlterConfigOpDelete
				ar.Configs = append(ar.Configs, ac)
			}
		}
		if len(ar.Configs) > 0 {
			areq.Resources = append(areq.Resources, ar)
		}
	}
	if len(areq.Resources) == 0 {
		return nil
	}
	as, err := areq.RequestWith(ctx, c.cl)
	if err != nil {
		return fmt.Errorf("delete group configs: %w", err)
	}
	for _, r := range as.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("delete configs of group %q: %w", r.ResourceName, err)
		}
	}
	return nil
}
