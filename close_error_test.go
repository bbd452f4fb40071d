package sluice

import (
	"testing"
	"time"
)

func TestUndeliveredMessageString(t *testing.T) {
	src := TopicPartition{Topic: "orders", Partition: 3}
	for _, tc := range []struct {
		u    UndeliveredMessage
		want string
	}{
		{UndeliveredMessage{Topic: "out", Source: src, Offset: 42}, "to out from orders/3@42"},
		{UndeliveredMessage{Topic: "out", Source: src, Offset: 0}, "to out from orders/3@0"},
		{UndeliveredMessage{Topic: "out", Source: src, Offset: -1}, "to out from orders/3"},
	} {
		if got := tc.u.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.u, got, tc.want)
		}
	}
}

// A CloseError built by hand (no backend) has no package prefix.
func TestCloseErrorWithoutPackage(t *testing.T) {
	e := &CloseError{Timeout: time.Second, Undelivered: []UndeliveredMessage{{Topic: "out", Source: TopicPartition{Topic: "in"}, Offset: 0}}}
	if got, want := e.Error(), "closing the producer: 1 message undelivered after 1s (to out from in/0@0)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
