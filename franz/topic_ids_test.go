package franz

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// replacedTopics finds a topic recreated under its name (another ID) and
// a topic deleted (unknown), and leaves a topic with its fetched ID; a
// topic error without an ID leaves the topic unverified.
func TestReplacedTopics(t *testing.T) {
	b := kafkatest.NewKfake(t)
	b.CreateTopic(t, "same", 1)
	b.CreateTopic(t, "recreated", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	ids := topicIDsOf(t, cl, "same", "recreated")
	fetched := map[string][16]byte{
		"same":      ids["same"],
		"recreated": {1}, // the ID of a topic since deleted
		"deleted":   {2},
	}
	replaced, unverified, err := replacedTopics(ctx, cl, fetched)
	if err != nil || len(unverified) != 1 || !errors.Is(unverified["deleted"], kerr.UnknownTopicOrPartition) || !slices.Equal(replaced, []string{"recreated"}) {
		t.Fatalf("replacedTopics = %v, %v, %v; want [recreated], deleted unverified (UNKNOWN_TOPIC_OR_PARTITION), nil", replaced, unverified, err)
	}

	b.Cluster().ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.ErrorCode = kmsg.StringPtr("same"), kerr.TopicAuthorizationFailed.Code
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	replaced, unverified, err = replacedTopics(ctx, cl, map[string][16]byte{"same": ids["same"]})
	if err != nil || len(replaced) != 0 || !errors.Is(unverified["same"], kerr.TopicAuthorizationFailed) {
		t.Fatalf("replacedTopics = %v, %v, %v; want none, same: TOPIC_AUTHORIZATION_FAILED, nil", replaced, unverified, err)
	}
}

// topicIDsOf returns the IDs of topics (Metadata).
func topicIDsOf(t *testing.T, cl *kgo.Client, topics ...string) map[string][16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	for _, topic := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][16]byte)
	for _, rt := range resp.Topics {
		if rt.Topic != nil && rt.ErrorCode == 0 {
			out[*rt.Topic] = rt.TopicID
		}
	}
	if len(out) != len(topics) {
		t.Fatalf("topic IDs of %v: got %v", topics, out)
	}
	return out
}
