package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var errUnknownTopic = errors.New("topic does not exist")

// describeOne asks describe, an admin describe call, about group and
// returns group's entry of the answer, or the call's error, or the
// entry's own error (errOf).
func describeOne[M ~map[string]D, D any](ctx context.Context, describe func(context.Context, ...string) (M, error), group string, errOf func(D) error) (D, error) {
	ds, err := describe(ctx, group)
	d := ds[group]
	if err == nil {
		err = errOf(d)
	}
	return d, err
}

// membersOf converts the members of a describe answer with member.
func membersOf[M any](ms []M, member func(M) Member) []Member {
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, member(m))
	}
	return out
}

// describeGroup asks the broker for group through the admin API, which
// kfake and Apache Kafka both answer: its type from ListGroups, then the
// describe request of that type.
func describeGroup(ctx context.Context, cl *kgo.Client, adm *kadm.Client, group string) (Group, error) {
	g := Group{Name: group}
	for _, typ := range []string{"classic", "consumer", "share"} {
		ls, err := adm.ListGroupsByType(ctx, []string{typ})
		if err != nil {
			return g, fmt.Errorf("list %s groups: %w", typ, err)
		}
		if _, ok := ls[group]; ok {
			g.Type = typ
			break
		}
	}
	switch g.Type {
	case "classic":
		d, err := describeOne(ctx, adm.DescribeGroups, group, func(d kadm.DescribedGroup) error { return d.Err })
		if err != nil {
			return g, err
		}
		g.State = d.State
		for _, m := range d.Members {
			mm := Member{MemberID: m.MemberID, ClientID: m.ClientID, InstanceID: deref(m.InstanceID), Assignment: map[string][]int32{}}
			if c, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range c.Topics {
					mm.Assignment[t.Topic] = slices.Sorted(slices.Values(t.Partitions))
				}
			}
			g.Members = append(g.Members, mm)
		}
	case "consumer":
		d, err := describeOne(ctx, adm.DescribeConsumerGroups, group, func(d kadm.DescribedConsumerGroup) error { return d.Err })
		if err != nil {
			return g, err
		}
		g.State, g.Epoch = d.State, d.Epoch
		g.Members = membersOf(d.Members, func(m kadm.ConsumerGroupMember) Member {
			return Member{MemberID: m.MemberID, ClientID: m.ClientID, InstanceID: deref(m.InstanceID), Assignment: topicsSet(m.Assignment)}
		})
		if err := nameAssignedTopics(ctx, cl, adm, group, g.Members); err != nil {
			return g, err
		}
	case "share":
		d, err := describeOne(ctx, adm.DescribeShareGroups, group, func(d kadm.DescribedShareGroup) error { return d.Err })
		if err != nil {
			return g, err
		}
		g.State, g.Epoch = d.GroupState, d.GroupEpoch
		g.Members = membersOf(d.Members, func(m kadm.ShareGroupMember) Member {
			return Member{MemberID: m.MemberID, ClientID: m.ClientID, Assignment: topicsSet(m.Assignment)}
		})
	}
	slices.SortFunc(g.Members, func(a, b Member) int { return strings.Compare(a.MemberID, b.MemberID) })
	return g, nil
}

// nameAssignedTopics fills in the topic names of KIP-848 assignments
// described by topic id only: kfake's ConsumerGroupDescribe leaves the
// names out (Kafka sends both), and kadm keeps the names only. It asks
// again with the raw request, and resolves the ids with Metadata.
func nameAssignedTopics(ctx context.Context, cl *kgo.Client, adm *kadm.Client, group string, members []Member) error {
	if !slices.ContainsFunc(members, func(m Member) bool { _, ok := m.Assignment[""]; return ok }) {
		return nil
	}
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	md, err := adm.Metadata(ctx)
	if err != nil {
		return err
	}
	names := make(map[kadm.TopicID]string, len(md.Topics))
	for _, td := range md.Topics {
		names[td.ID] = td.Topic
	}
	byID := make(map[string]map[string][]int32)
	for _, rg := range resp.Groups {
		for _, rm := range rg.Members {
			a := make(map[string][]int32)
			for _, tp := range rm.Assignment.TopicPartitions {
				name := tp.Topic
				if name == "" {
					name = names[kadm.TopicID(tp.TopicID)]
				}
				a[name] = slices.Sorted(slices.Values(tp.Partitions))
			}
			byID[rm.MemberID] = a
		}
	}
	for i, m := range members {
		if a, ok := byID[m.MemberID]; ok {
			members[i].Assignment = a
		}
	}
	return nil
}

func topicsSet(s kadm.TopicsSet) map[string][]int32 {
	out := make(map[string][]int32, len(s))
	for t, ps := range s {
		out[t] = slices.Sorted(func(yield func(int32) bool) {
			for p := range ps {
				if !yield(p) {
					return
				}
			}
		})
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
