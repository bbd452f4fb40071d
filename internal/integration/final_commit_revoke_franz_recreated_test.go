package integration

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestFinalCommitRevokeOfARecreatedTopicFranz is
// TestFinalCommitRevokeOfARecreatedTopicKIP848 with a franz source, under
// KIP-848 and cooperative-sticky: A has processed the 200 records of a
// topic and committed nothing when it is stopped; every commit is
// answered REBALANCE_IN_PROGRESS (retried) until A logs a revoke while
// stopping, while the topic is deleted and created again with 300 new
// records. The franz source checks the topic's ID before every commit (a
// revoke's included), so the retry finds the topic replaced and sends
// nothing: the old topic's offset (200) never lands on the new topic,
// Run returns nil, and the next consumer processes all 300 new records.
func TestFinalCommitRevokeOfARecreatedTopicFranz(t *testing.T) {
	runFranzProtocols(t, franzProtocols[1:], revokeOfARecreatedTopicFranz)
}

func revokeOfARecreatedTopicFranz(t *testing.T, protocol string, protoOpts []kgo.Opt) {
	b := kafkatest.NewKfake(t, kafkatest.WithBrokerConfig(map[string]string{"group.consumer.heartbeat.interval.ms": "250"}))
	r := newFaultRun(t, b, "frevoke-recreated-franz-"+protocol, 1, 200)
	var revokeSeen atomic.Bool
	src := newFranzA(t, r, 0, revokeWatchLogger(t, &revokeSeen),
		append([]kgo.Opt{kgo.MetadataMaxAge(100 * time.Millisecond), kgo.MetadataMinAge(10 * time.Millisecond)}, protoOpts...)...)
	a := startAOwning(t, r, src, 1)
	revokeOfARecreatedTopic(t, r, a, &revokeSeen, kerr.RebalanceInProgress, func() sluice.Source {
		return newFranzSourceEvery(t, b, r.group, r.topic, 50*time.Millisecond, append([]kgo.Opt{kgo.ClientID("B")}, protoOpts...)...)
	})
}
