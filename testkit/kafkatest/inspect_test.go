//go:build linux

package kafkatest

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
)

// ReadAll returns the records of aborted transactions (read_uncommitted)
// and no transaction markers, also when a marker is the last offset of a
// partition, and the offsets are those of the log on both brokers.
func TestReadAllOnATransactionalTopic(t *testing.T) {
	b := NewBroker(t, WithTopic("tx", 2))
	ctx := minuteContext(t)
	b.Produce(t, "tx", sluice.Record{Partition: 0, Value: []byte("plain")})
	txnProduce(ctx, t, b, "id", "tx", false) // p0: offset 1 record, 2 abort marker
	txnProduce(ctx, t, b, "id", "tx", true)  // p0: offset 3 record, 4 commit marker
	got := b.ReadAll(t, "tx")
	var s []string
	for _, r := range got {
		s = append(s, fmt.Sprintf("%d/%d:%s", r.Partition, r.Offset, r.Value))
	}
	if fmt.Sprint(s) != "[0/0:plain 0/1:txn 0/3:txn]" {
		t.Errorf("ReadAll = %v, want [0/0:plain 0/1:txn 0/3:txn]", s)
	}
	if hw := b.HighWatermarks(t, "tx"); fmt.Sprint(hw) != "map[0:5 1:0]" {
		t.Errorf("HighWatermarks = %v, want map[0:5 1:0]", hw)
	}
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	var os kadm.Offsets
	os.AddOffset("tx", 0, 3, -1)
	if _, err := adm.DeleteRecords(ctx, os); err != nil {
		t.Fatal(err)
	}
	if lso, hw := b.LogStartOffsets(t, "tx"), b.HighWatermarks(t, "tx"); fmt.Sprint(lso, hw) != "map[0:3 1:0] map[0:5 1:0]" {
		t.Errorf("after DeleteRecords below 3: log start offsets %v, high watermarks %v, want map[0:3 1:0] map[0:5 1:0]", lso, hw)
	}
	if got := b.ReadAll(t, "tx"); len(got) != 1 || got[0].Offset != 3 {
		t.Errorf("ReadAll after DeleteRecords = %+v, want the record at offset 3", got)
	}
	// A transaction still open: its record is below the high watermark
	// and ReadAll returns it.
	cl := openTxn(ctx, t, b, "open", &kgo.Record{Topic: "tx", Partition: 1, Value: []byte("open")})
	defer cl.Close()
	if hw := b.HighWatermarks(t, "tx"); fmt.Sprint(hw) != "map[0:5 1:1]" {
		t.Errorf("HighWatermarks with a transaction open = %v, want map[0:5 1:1]", hw)
	}
	if got := b.ReadAll(t, "tx"); len(got) != 2 || got[1].Partition != 1 || got[1].Offset != 0 {
		t.Errorf("ReadAll with a transaction open = %+v, want offset 3 of partition 0 and offset 0 of partition 1", got)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}

// Committed of a topic that does not exist is empty on both brokers, as
// for a group that does not exist.
func TestCommittedOfAnUnknownTopicIsEmpty(t *testing.T) {
	b := NewBroker(t)
	ctx := minuteContext(t)
	c, err := b.CommittedContext(ctx, "nobody", "missing")
	if err != nil || len(c) != 0 {
		t.Fatalf("Committed(nobody, missing) = %v, %v; want an empty map", c, err)
	}
}
