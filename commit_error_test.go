package sluice

import (
	"errors"
	"testing"
)

// CommitError names the reason, the offsets sorted, and the cause, which
// it wraps.
func TestCommitErrorText(t *testing.T) {
	cause := errors.New("broker said no")
	e := &CommitError{Reason: "revoke", Err: cause, Offsets: []Offset{
		{TopicPartition: TopicPartition{Topic: "b", Partition: 0}, Next: 7},
		{TopicPartition: TopicPartition{Topic: "a", Partition: 1}, Next: 3},
	}}
	if got, want := e.Error(), "revoke commit of [a/1@3 b/0@7]: broker said no"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, cause) {
		t.Error("CommitError does not wrap its cause")
	}
}
