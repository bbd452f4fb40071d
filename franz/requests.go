package franz

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
)

// byTopic groups items by their topic, as Kafka's requests list them:
// the topics in the order they first appear in items, each topic's items
// in their order in items.
func byTopic[T any](items []T, topic func(T) string) (topics []string, groups map[string][]T) {
	groups = make(map[string][]T)
	for _, it := range items {
		t := topic(it)
		if _, ok := groups[t]; !ok {
			topics = append(topics, t)
		}
		groups[t] = append(groups[t], it)
	}
	return topics, groups
}

func tpTopic(tp sluice.TopicPartition) string { return tp.Topic }

// offsetFetchRequest asks for the offsets each of groups committed for
// tps (OffsetFetch).
func offsetFetchRequest(groups []string, tps []sluice.TopicPartition) *kmsg.OffsetFetchRequest {
	topics, by := byTopic(tps, tpTopic)
	req := kmsg.NewPtrOffsetFetchRequest()
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic = t
			for _, tp := range by[t] {
				rt.Partitions = append(rt.Partitions, tp.Partition)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		req.Groups = append(req.Groups, rg)
	}
	return req
}
