package sluice

// TopicPartition names one partition of one topic. It is comparable, and
// used as a map key throughout.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Offset is the next offset to consume for a partition: the value a source
// commits to the consumer group.
type Offset struct {
	TopicPartition
	Next int64
}
