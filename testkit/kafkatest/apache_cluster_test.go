//go:build linux

package kafkatest

import (
	"strings"
	"testing"
)

// kafka-storage format takes the cluster id as an argument: one that
// begins with '-' reads as an option, and the format fails. Kafka's own
// Uuid.randomUuid never makes one; neither does newClusterID.
func TestClusterIDNeverBeginsWithADash(t *testing.T) {
	for range 10_000 { // about 1 in 64 random ids begins with '-'
		if id := newClusterID(); strings.HasPrefix(id, "-") || len(id) != 22 {
			t.Fatalf("newClusterID() = %q: want 22 characters, not beginning with '-'", id)
		}
	}
}
