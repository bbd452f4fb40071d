package franz

import (
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// oldIDSessions reads topic's ID on b (a kfake broker), the ID the topic
// will be deleted under, and returns a function that, given each
// ShareFetch request the cluster receives (from within its control),
// reports whether the share session of the node it was sent to holds a
// partition under that ID: a request under the ID puts it in the
// session, a new session (epoch 0 or below) or a request forgetting the
// partition takes it out.
func oldIDSessions(t *testing.T, b *kafkatest.Broker, topic string) func(kmsg.Request) bool {
	t.Helper()
	c := b.Cluster()
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	details, err := adm.ListTopics(t.Context(), topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("%s' topic ID: %v %v", topic, err, details[topic].Err)
	}
	oldID := [16]byte(details[topic].ID)

	var mu sync.Mutex
	session := map[int32]bool{} // by node: its share session holds the old partition
	return func(kr kmsg.Request) bool {
		req := kr.(*kmsg.ShareFetchRequest)
		node := c.CurrentNode()
		mu.Lock()
		defer mu.Unlock()
		if req.ShareSessionEpoch <= 0 {
			session[node] = false
		}
		for _, rt := range req.Topics {
			if rt.TopicID == oldID {
				session[node] = true
			}
		}
		for _, ft := range req.ForgottenTopicsData {
			if ft.TopicID == oldID {
				session[node] = false
			}
		}
		return session[node]
	}
}
