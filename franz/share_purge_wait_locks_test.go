package franz

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The poll that reports a topic gone also delivers records of another
// topic (the same ShareFetch carries both). While the source consumes the
// deleted topic anew, its purge (kgo.Client.PurgeTopicsFromClient) waits
// on kgo's metadata loop for a Metadata request the broker answers late,
// here longer than the acquisition lock: the poll loop neither renews the
// locks of the records it holds nor acknowledges their outcomes
// meanwhile, although the graph finished them at once. Their locks
// expire, the broker hands them out again, and the source delivers them a
// second time. Each record of the other topic must be delivered once.
func TestShareSourceRecordsOfAnotherTopicKeepTheirLocksWhileAPurgeWaitsForMetadata(t *testing.T) {
	const (
		group        = "g"
		stays        = 40
		perFetch     = 5
		lock         = 2 * time.Second
		metadataLate = 6 * time.Second // after the source consumed orders anew
	)
	b := shareTopicsBroker(t, kafkatest.NewKfake, []string{"orders", "stays"},
		kafkatest.WithKfakeOptions(kfake.BrokerConfigs(map[string]string{
			"group.share.record.lock.duration.ms": fmt.Sprint(lock.Milliseconds()),
			"share.record.lock.sweep.interval.ms": "100",
		})))
	c := b.Cluster()
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})

	anew := make(chan string, 16)
	release := make(chan struct{}) // the broker answers the held Metadata requests
	var answer *time.Timer
	var answerOnce sync.Once
	logger := consumingAnewLogger(t, func(topic string, _ time.Time) {
		answerOnce.Do(func() { answer = time.AfterFunc(metadataLate, func() { close(release) }) })
		anew <- topic
	})
	r := startShareRun(t, b, ShareConfig{Group: group, Topics: []string{"orders", "stays"},
		CloseTimeout: 5 * time.Second, Logger: logger,
		Opts: []kgo.Opt{
			// A few records of stays in every ShareFetch.
			kgo.ShareMaxRecords(perFetch), kgo.ShareMaxRecordsStrict(),
			// The client keeps a Metadata request in flight; each
			// may take up to 30s before kgo gives it up.
			kgo.MetadataMinAge(100 * time.Millisecond), kgo.MetadataMaxAge(time.Second),
			kgo.RequestTimeoutOverhead(30 * time.Second)}}, reportingGraph)
	r.await("orders:old-0@0")

	ended := make(chan struct{}) // the test is over: no answer waits any longer
	t.Cleanup(func() {
		close(ended)
		answerOnce.Do(func() {})
		if answer != nil {
			answer.Stop()
		}
	})
	deletion := watchDeletion(c)
	// From the deletion on, the share client's Metadata requests (only
	// it names both topics) are answered once release is closed.
	holdMetadataAfterDeletion(c, deletion, func() {
		select {
		case <-release:
		case <-ended:
		}
	}, "stays", "orders")

	// Until then, the broker answers each ShareFetch 300ms late: a
	// Metadata request is in flight (and held) by the time the client
	// reports orders gone, on its sixth ShareFetch after the deletion.
	c.ControlKey(kmsg.ShareFetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if deletion.seen() {
			c.SleepControl(func() {
				select {
				case <-time.After(300 * time.Millisecond):
				case <-release:
				case <-ended:
				}
			})
		}
		return nil, nil, false
	})

	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), recreateWait)
	defer dcancel()
	if resp, err := adm.DeleteTopics(dctx, "orders"); err != nil || resp.Error() != nil {
		t.Fatalf("deleting orders: %v %v", err, resp.Error())
	}
	// Records of stays in every ShareFetch from now on, the one that
	// reports orders gone included.
	// A fresh client, whose Metadata requests name stays alone.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic("stays"))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	recs := make([]*kgo.Record, stays)
	want := make([]string, stays)
	for i := range recs {
		recs[i] = &kgo.Record{Value: fmt.Appendf(nil, "stay-%d", i)}
		want[i] = fmt.Sprintf("stays:stay-%d@%d", i, i)
	}
	if err := pcl.ProduceSync(dctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	r.awaitConsumedAnew(anew, "orders")
	r.await(want...)
	r.wantAcknowledged("stays")
	r.stop()
	var twice []string
	for _, v := range want {
		if r.got[v] > 1 {
			twice = append(twice, fmt.Sprintf("%s (%d times)", v, r.got[v]))
		}
	}
	if len(twice) > 0 {
		t.Errorf("records of stays delivered more than once (their locks expired while the purge of orders waited %v for metadata): %v",
			metadataLate, twice)
	}
}
