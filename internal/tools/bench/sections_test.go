package main

import (
	"strings"
	"testing"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

func TestParseFlagsNamesBadValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-records", "0"}, "-records=0"},
		{[]string{"-records", "100", "-no-memory", "-partitions", "200"}, "-partitions=200"},
		{[]string{"-records", "100"}, "the memory section needs at least 256"},
		{[]string{"-value", "10"}, "-value=10"},
		{[]string{"-runs", "0"}, "-runs=0"},
		{[]string{"-cases", "raw-franz,nope"}, `unknown case "nope"`},
		{[]string{"-budget", "-1"}, "-budget=-1"},
		{[]string{"-memory", "-no-memory"}, "contradict"},
		{[]string{"-slow", "-no-slow"}, "contradict"},
		{[]string{"-records", "50", "-no-memory", "-partitions", "8"}, "the slow section needs at least 64"},
		{[]string{"-broker", "nope"}, `-broker="nope": want kfake or apache`},
	} {
		_, err := parseFlags(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", c.args, err, c.want)
		}
	}
	o, err := parseFlags([]string{"-cases", "k2k-raw-franz, raw-confluent"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.cases) != 2 || o.cases[0] != "raw-confluent" || o.cases[1] != "k2k-raw-franz" {
		t.Fatalf("cases %q, want [raw-confluent k2k-raw-franz] (report order)", o.cases)
	}
}

func TestSectionFlags(t *testing.T) {
	for _, c := range []struct {
		args                []string
		speed, memory, slow bool
	}{
		{nil, true, true, true},
		{[]string{"-memory"}, false, true, false},
		{[]string{"-slow"}, false, false, true},
		{[]string{"-memory", "-slow"}, false, true, true},
		{[]string{"-no-memory"}, true, false, true},
		{[]string{"-no-slow"}, true, true, false},
		{[]string{"-no-memory", "-no-slow"}, true, false, false},
	} {
		o, err := parseFlags(c.args)
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", c.args, err)
		}
		if o.runSpeed() != c.speed || o.runMemory() != c.memory || o.runSlow() != c.slow {
			t.Errorf("parseFlags(%q): speed %v, memory %v, slow %v; want %v, %v, %v",
				c.args, o.runSpeed(), o.runMemory(), o.runSlow(), c.speed, c.memory, c.slow)
		}
	}
}

func TestBrokerFlag(t *testing.T) {
	for args, want := range map[string]kafkatest.Kind{"": kafkatest.Kfake, "kfake": kafkatest.Kfake, "apache": kafkatest.Apache} {
		var a []string
		if args != "" {
			a = []string{"-broker", args}
		}
		o, err := parseFlags(a)
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", a, err)
		}
		if o.broker != want {
			t.Errorf("parseFlags(%q): broker %q, want %q", a, o.broker, want)
		}
	}
}

func TestPlanTopicsSharesTopicsOfTheSamePartitionCount(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // name:partitions, in creation order
	}{
		{nil, "in:8 in-256:256 in-64:64"},
		{[]string{"-partitions", "64"}, "in:64 in-8:8 in-256:256"},
		{[]string{"-slow"}, "in-64:64"},
		{[]string{"-memory"}, "in-8:8 in-256:256"},
		{[]string{"-no-memory", "-no-slow"}, "in:8"},
	} {
		o, err := parseFlags(c.args)
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", c.args, err)
		}
		byParts, topics := planTopics(o)
		var got []string
		for _, tp := range topics {
			got = append(got, tp.String())
			if byParts[tp.l.partitions] != tp {
				t.Errorf("%q: byParts[%d] = %v, want %v", c.args, tp.l.partitions, byParts[tp.l.partitions], tp)
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%q: topics %q, want %q", c.args, got, c.want)
		}
	}
}
