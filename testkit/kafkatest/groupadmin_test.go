package kafkatest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
)

// Commit sets a group's offsets as an operator's tool does: Committed
// reads back exactly what was committed, a partition left out stays
// uncommitted, and a later Commit moves an offset (backwards too).
func TestCommitIsWhatCommittedReads(t *testing.T) {
	b := NewBroker(t, WithTopic("t", 3))
	b.Commit(t, "g", "t", map[int32]int64{0: 7, 1: 3})
	if got := b.Committed(t, "g", "t"); fmt.Sprint(got) != "map[0:7 1:3]" {
		t.Fatalf("Committed after Commit = %v, want map[0:7 1:3]", got)
	}
	b.Commit(t, "g", "t", map[int32]int64{0: 5})
	if got := b.Committed(t, "g", "t"); fmt.Sprint(got) != "map[0:5 1:3]" {
		t.Fatalf("Committed after a second Commit = %v, want map[0:5 1:3]", got)
	}
}

// A share group whose share.auto.offset.reset was set to earliest before
// its first start reads the records produced before it existed.
func TestSetGroupConfigShareFromEarliest(t *testing.T) {
	b := NewBroker(t, WithTopic("t", 1))
	b.Produce(t, "t", sluice.Record{Value: []byte("before")})
	b.SetGroupConfig(t, "sg", "share.auto.offset.reset", "earliest")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ShareGroup("sg"), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := minuteContext(t)
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the share group read nothing within a minute: %v", ctx.Err())
		}
		if rs := fs.Records(); len(rs) > 0 {
			if len(rs) != 1 || string(rs[0].Value) != "before" || rs[0].Offset != 0 {
				t.Fatalf("the share group read %d records, the first %q at %d; want one, \"before\" at 0", len(rs), rs[0].Value, rs[0].Offset)
			}
			return
		}
	}
}

// A group config the broker refuses is an error naming the config and
// the group.
func TestSetGroupConfigErrorNamesIt(t *testing.T) {
	b := NewBroker(t)
	err := b.SetGroupConfigContext(minuteContext(t), "g", "no.such.config", "1")
	if err == nil || !strings.Contains(err.Error(), `set no.such.config of group "g"`) {
		t.Fatalf("SetGroupConfigContext of an unknown config = %v, want an error naming it and the group", err)
	}
}

// Logger is nil (discard) unless EnvLog is set.
func TestLoggerOnlyWithEnvLog(t *testing.T) {
	t.Setenv(EnvLog, "")
	if l := Logger(t); l != nil {
		t.Errorf("Logger without %s = %v, want nil", EnvLog, l)
	}
	t.Setenv(EnvLog, "1")
	if l := Logger(t); l == nil {
		t.Errorf("Logger with %s=1 = nil, want a logger", EnvLog)
	}
}
