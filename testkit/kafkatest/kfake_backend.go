package kafkatest

import (
	"context"

	"github.com/twmb/franz-go/pkg/kfake"
)

// kfakeBackend is a kfake cluster in this process.
type kfakeBackend struct{ c *kfake.Cluster }

func (k kfakeBackend) kind() Kind         { return Kfake }
func (k kfakeBackend) addrs() []string    { return k.c.ListenAddrs() }
func (k kfakeBackend) logTail(int) string { return "" }
func (k kfakeBackend) close()             { k.c.Close() }

func (k kfakeBackend) createTopic(_ context.Context, topic string, partitions int32, configs map[string]string) error {
	return k.c.CreateTopic(topic, partitions, configs)
}

func (k kfakeBackend) offsets(_ context.Context, topic string) (start, end map[int32]int64, err error) {
	infos := k.c.PartitionInfos(topic)
	if len(infos) == 0 {
		return nil, nil, errUnknownTopic
	}
	start, end = make(map[int32]int64, len(infos)), make(map[int32]int64, len(infos))
	for _, pi := range infos {
		start[pi.Partition], end[pi.Partition] = pi.LogStartOffset, pi.HighWatermark
	}
	return start, end, nil
}

func (k kfakeBackend) committed(_ context.Context, group, topic string) (map[int32]int64, error) {
	out := make(map[int32]int64)
	if gi := k.c.GroupInfo(group); gi != nil {
		for p, c := range gi.Commits[topic] {
			out[p] = c.Offset
		}
	}
	return out, nil
}
