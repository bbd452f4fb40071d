package franz

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// When the share source consumes a deleted topic anew, the outcomes it
// acknowledged before (and the records it releases) are still pending in
// kgo: kgo sends them with the next ShareFetch of the broker, under the
// topic's old ID, in a partition of the request that only acknowledges
// (kgo forgets it from the share session in the same request). That
// ShareFetch is sent after the purge, so the source's grace (counted from
// the purge, for fetches sent before it) does not bound its answer. If
// the broker set the partition's fetch error code (not only its
// acknowledge error code) to UNKNOWN_TOPIC_ID, kgo would report the topic
// gone once more from that answer (the purged cursor has failed more than
// kgo's five strips already): a report the source can take for a new
// deletion once the grace is over, losing the new topic's graphs and
// records. The source relies on the broker answering such a partition
// with its acknowledge error code only (Apache Kafka 4.4 and kfake both
// do: error code 0, acknowledge error code UNKNOWN_TOPIC_ID).
func TestShareFetchAcknowledgingOnlyADeletedTopicSetsNoFetchError(t *testing.T) {
	const group = "g"
	b := shareTopicsBroker(t, kafkatest.NewBroker, []string{"orders"})
	b.SetGroupConfig(t, group, "share.auto.offset.reset", "earliest")
	b.Produce(t, "orders", sluice.Record{Value: []byte("old-0")})

	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), recreateWait)
	defer cancel()
	details, err := adm.ListTopics(ctx, "orders")
	if err != nil || details["orders"].Err != nil {
		t.Fatalf("orders' metadata: %v %v", err, details["orders"].Err)
	}
	oldID := [16]byte(details["orders"].ID)
	leader := details["orders"].Partitions[0].Leader

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var id [16]byte
	_, _ = rand.Read(id[:])
	member := base64.RawURLEncoding.EncodeToString(id[:])

	// Join the share group until it assigns orders' partition.
	epoch := int32(0)
	for assigned := false; !assigned; {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{"orders"}
		}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			t.Fatalf("share group heartbeat: %v", err)
		}
		epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			for _, tp := range resp.Assignment.TopicPartitions {
				assigned = assigned || tp.TopicID == oldID
			}
		}
		if !assigned {
			select {
			case <-ctx.Done():
				t.Fatal("orders not assigned to the share group member")
			case <-time.After(100 * time.Millisecond):
			}
		}
	}

	br := cl.Broker(int(leader))
	session := int32(0)
	fetch := func(fill func(*kmsg.ShareFetchRequest)) *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &[]string{group}[0], &member, session
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 500, 1, 1<<20, 10, 10
		fill(req)
		kresp, err := br.Request(ctx, req)
		if err != nil {
			t.Fatalf("share fetch: %v", err)
		}
		resp := kresp.(*kmsg.ShareFetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("share fetch: %v", err)
		}
		session = max(1, session+1)
		return resp
	}

	// Acquire old-0.
	var first, last int64 = -1, -1
	for first < 0 {
		resp := fetch(func(req *kmsg.ShareFetchRequest) {
			if session == 0 {
				rt := kmsg.NewShareFetchRequestTopic()
				rt.TopicID = oldID
				rp := kmsg.NewShareFetchRequestTopicPartition()
				rp.Partition, rp.PartitionMaxBytes = 0, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
			}
		})
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if len(rp.AcquiredRecords) > 0 {
					first, last = rp.AcquiredRecords[0].FirstOffset, rp.AcquiredRecords[0].LastOffset
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatal("old-0 not acquired")
		}
	}

	// The topic is deleted.
	if resp, err := adm.DeleteTopics(ctx, "orders"); err != nil || resp.Error() != nil {
		t.Fatalf("deleting orders: %v %v", err, resp.Error())
	}
	for {
		d, err := adm.ListTopics(ctx, "orders")
		if err == nil && d["orders"].Err != nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("orders still listed after its deletion")
		case <-time.After(100 * time.Millisecond):
		}
	}

	// A ShareFetch acknowledging old-0 under the old ID and forgetting
	// its partition, as kgo sends the acknowledgements pending when a
	// topic is purged from the client.
	resp := fetch(func(req *kmsg.ShareFetchRequest) {
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = oldID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = 0
		ab := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = first, last, []int8{1}
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, ab)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ft := kmsg.NewShareFetchRequestForgottenTopicsData()
		ft.TopicID, ft.Partitions = oldID, []int32{0}
		req.ForgottenTopicsData = append(req.ForgottenTopicsData, ft)
	})
	found := false
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rt.TopicID != oldID || rp.Partition != 0 {
				continue
			}
			found = true
			t.Logf("%s: the acknowledge-only partition of the deleted topic: error code %d (%v), acknowledge error code %d (%v)",
				b.Kind(), rp.ErrorCode, kerr.ErrorForCode(rp.ErrorCode), rp.AcknowledgeErrorCode, kerr.ErrorForCode(rp.AcknowledgeErrorCode))
			if rp.ErrorCode != 0 {
				t.Errorf("the partition of a deleted topic that a ShareFetch only acknowledges (and forgets) has the fetch error %v: kgo reports the topic gone again from a fetch sent after the purge",
					kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	if !found {
		t.Logf("%s: the answer has no entry for the acknowledge-only partition", b.Kind())
	}
}
