package sluice

// Message is what a producing stage writes to Kafka for one value: the
// key, the value and the headers, in order. The topic and the partition
// are the producer's to choose (the stage's topic, the client's
// partitioner). The producing stage (sink.Produce, with any client) reads
// it and never writes into its slices; the producer may hold them until the
// message's delivery was reported, so do not modify them after returning
// a Message either.
type Message struct {
	Key     []byte
	Value   []byte
	Headers []Header
}

// The headers a dead-letter destination of Sluice (sink's and franz's
// Producer.DeadLetter) adds to every dead letter, after the record's own
// headers, in this order. Their values are text: the original topic, its
// partition and offset in decimal, the error (without the "invalid input: "
// prefix of [Invalid]) and the name of the stage that found the record
// invalid.
const (
	DeadLetterHeaderTopic     = "sluice.dlq.topic"
	DeadLetterHeaderPartition = "sluice.dlq.partition"
	DeadLetterHeaderOffset    = "sluice.dlq.offset"
	DeadLetterHeaderError     = "sluice.dlq.error"
	DeadLetterHeaderStage     = "sluice.dlq.stage"
)
