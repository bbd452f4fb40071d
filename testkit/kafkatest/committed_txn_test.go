package kafkatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Offsets a transaction sends to a group are committed by the
// transaction's end; on Apache Kafka they are written to the group after
// EndTxn has answered. Committed reads them exactly once the transaction
// has ended, and on Apache Kafka it does not answer (ctx ends first) while
// the transaction still holds them.
func TestCommittedWaitsForATransactionsOffsets(t *testing.T) {
	b := NewBroker(t, WithTopic("t", 2))
	ctx := minuteContext(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const txnID, group = "committed-txn", "g"
	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionalID = kmsg.StringPtr(txnID)
	initReq.TransactionTimeoutMillis = 60_000
	var id kmsg.InitProducerIDResponse
	for {
		r, err := initReq.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if err = kerr.ErrorForCode(r.ErrorCode); err == nil {
			id = *r
			break
		} else if !kerr.IsRetriable(err) || ctx.Err() != nil {
			t.Fatalf("InitProducerID: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // the transaction coordinator is loading
	}
	addReq := kmsg.NewPtrAddOffsetsToTxnRequest()
	addReq.TransactionalID, addReq.ProducerID, addReq.ProducerEpoch, addReq.Group = txnID, id.ProducerID, id.ProducerEpoch, group
	if r, err := addReq.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %v", err, kerr.ErrorForCode(r.ErrorCode))
	}
	commitReq := kmsg.NewPtrTxnOffsetCommitRequest()
	commitReq.TransactionalID, commitReq.Group, commitReq.ProducerID, commitReq.ProducerEpoch = txnID, group, id.ProducerID, id.ProducerEpoch
	commitReq.Generation = -1
	details, err := kadm.NewClient(cl).ListTopics(ctx, "t")
	if err != nil || details["t"].Err != nil {
		t.Fatalf("metadata of t: %v %v", err, details["t"].Err)
	}
	topic := kmsg.NewTxnOffsetCommitRequestTopic()
	topic.Topic, topic.TopicID = "t", details["t"].ID
	for p, o := range map[int32]int64{0: 4, 1: 9} {
		part := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		part.Partition, part.Offset, part.LeaderEpoch = p, o, -1
		topic.Partitions = append(topic.Partitions, part)
	}
	commitReq.Topics = append(commitReq.Topics, topic)
	r, err := commitReq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("TxnOffsetCommit %s/%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	if b.Kind() == Apache {
		short, cancel := context.WithTimeout(ctx, time.Second)
		got, err := b.CommittedContext(short, group, "t")
		cancel()
		if err == nil {
			t.Fatalf("Committed while the transaction holds its offsets = %v, want no answer before the deadline", got)
		}
	}
	endReq := kmsg.NewPtrEndTxnRequest()
	endReq.TransactionalID, endReq.ProducerID, endReq.ProducerEpoch, endReq.Commit = txnID, id.ProducerID, id.ProducerEpoch, true
	if r, err := endReq.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v %v", err, kerr.ErrorForCode(r.ErrorCode))
	}
	if got := b.Committed(t, group, "t"); fmt.Sprint(got) != "map[0:4 1:9]" {
		t.Fatalf("Committed after the transaction's commit = %v, want map[0:4 1:9]", got)
	}
}
