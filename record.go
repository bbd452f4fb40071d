package sluice

import "time"

// Record is one Kafka message as a graph receives it. The runtime never
// modifies a Record after handing it to a graph; stage functions may keep
// references to Key, Value and Headers but must not modify them, because
// the same bytes are sent to the dead-letter destination if the message is
// found invalid.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp time.Time
}

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}
