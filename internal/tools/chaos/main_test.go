package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The supervisor's spawn goroutine (newSupervisor) never ends by design:
// the children's PR_SET_PDEATHSIG is tied to its locked OS thread.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(pgServer.StopAfter(kafkatest.Pooled(m)), goleak.IgnoreTopFunction("github.com/sluice-go/sluice/internal/tools/chaos.newSupervisor.func1"))
}

func TestFlagsNameWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-plan", "everything"}, `-plan: "everything" is not one of random, stop-all, kill-joiner-joined`},
		{[]string{"-short", "-plan", "stop-all"}, "-plan=stop-all with -short"},
		{[]string{"-rss", "-rss-budget", "0"}, "-rss-budget=0: must be positive"},
		{[]string{"-rss", "-rss-consume", "300000"}, "-rss-consume=300000: more than the 200000 records"},
		{[]string{"-rss-partitions", "8,x"}, `"x" is not a positive partition count`},
		{[]string{"-rss", "-rss-queue-kb", "-1"}, "-rss-queue-kb=-1: must not be negative"},
		{[]string{"-client", "sarama"}, `-client: "sarama" is not one of librdkafka, franz, both`},
		{[]string{"-broker", "confluent"}, `flag -broker: "confluent" is not one of kfake, apache`},
		{[]string{"-broker", ""}, `flag -broker: "" is not one of kfake, apache`},
		{[]string{"-sink", "mysql"}, `-sink: "mysql" is not one of kafka, postgres`},
		{[]string{"-sink", "postgres", "-exactly-once"}, "-sink postgres and -exactly-once"},
		{[]string{"-sink", "postgres", "-rss"}, "-sink postgres and -rss"},
	} {
		_, err := parseFlags(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	o, err := parseFlags([]string{"-plan", "stop-all", "-rounds", "20", "-rss-partitions", "8, 64"})
	if err != nil || o.plan != planStopAll || o.rounds != 20 || fmt.Sprint(o.rssSet.partitions) != "[8 64]" {
		t.Fatalf("parseFlags: %+v, %v", o, err)
	}
	if o.set.broker != kafkatest.Kfake || o.set.sink != sinkKafka {
		t.Fatalf("the default broker is %q and sink %q, want kfake and kafka", o.set.broker, o.set.sink)
	}
	if o, err := parseFlags([]string{"-short", "-sink", "postgres"}); err != nil || o.set.sink != sinkPostgres {
		t.Fatalf("parseFlags(-short -sink postgres): sink %q, %v", o.set.sink, err)
	}
	o, err = parseFlags([]string{"-short", "-broker", "apache"})
	if err != nil || o.set.broker != kafkatest.Apache || o.timeout != 10*time.Minute {
		t.Fatalf("parseFlags(-short -broker apache): broker %q, timeout %v, %v; want apache, 10m (a Java broker per scenario)", o.set.broker, o.timeout, err)
	}
}

func TestCombos(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-short"}, "[librdkafka/cooperative-sticky librdkafka/range librdkafka/consumer franz/cooperative-sticky]"},
		{[]string{"-short", "-protocols", "range"}, "[librdkafka/range]"},
		{[]string{"-short", "-client", "both", "-protocols", "range,consumer"}, "[librdkafka/range librdkafka/consumer franz/range franz/consumer]"},
		{[]string{"-short", "-client", "franz"}, "[franz/cooperative-sticky franz/range franz/consumer]"},
		{nil, "[librdkafka/cooperative-sticky librdkafka/range librdkafka/consumer franz/cooperative-sticky franz/range franz/consumer]"},
		{[]string{"-long", "-client", "librdkafka", "-protocols", "consumer"}, "[librdkafka/consumer]"},
		{[]string{"-exactly-once"}, "[librdkafka/cooperative-sticky librdkafka/range librdkafka/consumer franz/cooperative-sticky franz/range franz/consumer]"},
		{[]string{"-short", "-exactly-once"}, "[librdkafka/cooperative-sticky]"},
		{[]string{"-short", "-exactly-once", "-protocols", "consumer,range"}, "[librdkafka/consumer librdkafka/range]"},
		{[]string{"-short", "-exactly-once", "-client", "librdkafka"}, "[librdkafka/cooperative-sticky librdkafka/range librdkafka/consumer]"},
		{[]string{"-exactly-once", "-client", "both", "-protocols", "range"}, "[librdkafka/range franz/range]"},
	} {
		o, err := parseFlags(tc.args)
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", tc.args, err)
		}
		if got := fmt.Sprint(o.combos()); got != tc.want {
			t.Errorf("parseFlags(%q).combos() = %s, want %s", tc.args, got, tc.want)
		}
	}
}
