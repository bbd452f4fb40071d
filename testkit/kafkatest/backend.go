package kafkatest

import "context"

// backend is what a Broker runs on: kfake in this process, or an Apache
// Kafka cluster in Java processes. Every method may be called concurrently.
type backend interface {
	kind() Kind
	addrs() []string
	createTopic(ctx context.Context, topic string, partitions int32, configs map[string]string) error
	// offsets returns the log start and end offsets of every partition of
	// topic; errUnknownTopic if it does not exist.
	offsets(ctx context.Context, topic string) (start, end map[int32]int64, err error)
	// committed returns group's committed offsets on topic.
	committed(ctx context.Context, group, topic string) (map[int32]int64, error)
	// logTail is the end of the broker's own log, for a failing test.
	logTail(lines int) string
	close()
}

// Group describes a consumer group as the broker sees it.
type Group struct {
	Name string
	// Type is "classic", "consumer" (KIP-848) or "share" (KIP-932); empty
	// when the broker knows no such group.
	Type string
	// State is the broker's name for the group's state (Empty, Stable,
	// PreparingRebalance, ...).
	State string
	// Epoch is the group epoch of a consumer or share group; 0 for a
	// classic group, whose generation DescribeGroups does not report.
	Epoch int32
	// Members are the group's current members, sorted by MemberID.
	Members []Member
}

// Member is one member of a Group.
type Member struct {
	MemberID   string
	InstanceID string // empty unless the member is static
	ClientID   string
	// Assignment is the member's current assignment by topic, each
	// topic's partitions sorted.
	Assignment map[string][]int32
}
