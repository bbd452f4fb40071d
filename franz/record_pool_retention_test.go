package franz

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchOf encodes an uncompressed v2 record batch of n records at offsets
// first..first+n-1, each with a value of valueSize bytes, as a broker
// answers it in a fetch (the CRC is left zero: the callers disable its
// check).
func batchOf(first int64, n, valueSize int) []byte {
	var recs []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Key: fmt.Appendf(nil, "k-%d", first+int64(i)), Value: make([]byte, valueSize)}
		body := r.AppendTo(nil) // Length 0: one varint byte
		r.Length = int32(len(body) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{FirstOffset: first, Magic: 2, LastOffsetDelta: int32(n - 1), NumRecords: int32(n),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: recs}
	enc := b.AppendTo(nil)
	b.Length = int32(len(enc) - 12) // what follows FirstOffset and Length
	return b.AppendTo(nil)
}

// A fetch that starts inside a batch (a partition consumed from its
// committed offset, or fetched again after kgo stripped it for a pause or
// a rewind moved it) decodes the batch's records before that offset into
// the pooled slice, and kgo keeps none of them: they are never handed
// over, so never recycled (zeroed), and kgo's release puts the slice back
// into the recordPool without clearing them (pools.go, release: only the
// decompressed bytes are zeroed). Their Key, Value, Headers and Context
// point at the fetched bytes (for an uncompressed batch, the buffer of the
// whole fetch response), so PutRecords clears the whole slice: a pooled
// slice must hold nothing of an earlier fetch, or the response would live
// for as long as the slice cycles through the pool.
//
// The test decodes one batch of 1000 records of 4 KiB values from offset
// 999, as kgo does for a fetch at that offset, recycles the one record
// kgo keeps (the source's recycle), and looks at the slice the pool hands
// out next, as kgo would for the partition's next batch.
func TestPooledRecordSlicesHoldNoFetchedBytes(t *testing.T) {
	const n, valueSize = 1000, 4 << 10
	pool := new(recordPool)
	rp := &kmsg.FetchResponseTopicPartition{Partition: 0, HighWatermark: n, LastStableOffset: n, RecordBatches: batchOf(0, n, valueSize)}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset: n - 1, Topic: "t", Partition: 0, Pools: []kgo.Pool{pool}, DisableCRCValidation: true,
	}, rp, nil, nil)
	if fp.Err != nil {
		t.Fatal(fp.Err)
	}
	if len(fp.Records) != 1 || fp.Records[0].Offset != n-1 {
		t.Fatalf("kgo kept %d records, want the one at offset %d", len(fp.Records), n-1)
	}
	recycle(fp.Records) // the batch's only kept record: kgo puts the slice back

	s := pool.GetRecords(n)
	s = s[:cap(s)]
	var stale, pinned int
	for i := range s {
		if s[i].Key != nil || s[i].Value != nil || s[i].Context != nil {
			stale++
			pinned += len(s[i].Value)
		}
	}
	if stale > 0 {
		t.Fatalf("the slice the pool hands out holds %d records of an earlier fetch (first: offset %d key %q, %d-byte value), their values %d KiB of the fetched batch",
			stale, s[0].Offset, s[0].Key, len(s[0].Value), pinned>>10)
	}
}
