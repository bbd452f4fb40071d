package main

import (
	"maps"
	"testing"
	"time"
)

func TestGroupFlagsValidate(t *testing.T) {
	base := options{group: "g", input: "i", output: "o", dlq: "d", workers: 1, messages: 1}
	for _, tc := range []struct {
		name string
		g    groupFlags
		want string // "" means valid
	}{
		{"defaults", groupFlags{}, ""},
		{"each protocol", groupFlags{protocol: "range"}, ""},
		{"consumer", groupFlags{protocol: "consumer", drainTimeout: time.Second}, ""},
		{"classic session", groupFlags{protocol: "cooperative-sticky", sessionTimeout: 3 * time.Second}, ""},
		{"unknown protocol", groupFlags{protocol: "eager"},
			`--group-protocol="eager": want one of cooperative-sticky, range, consumer`},
		{"case matters", groupFlags{protocol: "Range"}, `--group-protocol="Range"`},
		{"session too short", groupFlags{sessionTimeout: 500 * time.Millisecond}, "--session-timeout=500ms: must be at least 1s"},
		{"negative session", groupFlags{sessionTimeout: -time.Second}, "--session-timeout=-1s"},
		{"session with KIP-848", groupFlags{protocol: "consumer", sessionTimeout: 3 * time.Second},
			"--session-timeout=3s: not supported with --group-protocol=consumer"},
		{"negative drain", groupFlags{drainTimeout: -time.Second}, "--drain-timeout=-1s: must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			o.groupFlags = tc.g
			checkValidate(t, o, tc.want)
		})
	}
}

func TestGroupFlagsOverrides(t *testing.T) {
	for _, tc := range []struct {
		g    groupFlags
		want map[string]any
	}{
		{groupFlags{}, map[string]any{"partition.assignment.strategy": "cooperative-sticky"}},
		{groupFlags{protocol: "range", clientID: "c1"},
			map[string]any{"partition.assignment.strategy": "range", "client.id": "c1"}},
		{groupFlags{protocol: "consumer"}, map[string]any{"group.protocol": "consumer"}},
		{groupFlags{protocol: "cooperative-sticky", sessionTimeout: 4 * time.Second}, map[string]any{
			"partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": 4000, "heartbeat.interval.ms": 400}},
	} {
		if got := tc.g.consumerOverrides(); !maps.Equal(got, tc.want) {
			t.Errorf("%+v: consumer overrides %v, want %v", tc.g, got, tc.want)
		}
	}
	if got := (groupFlags{clientID: "c1", protocol: "range"}).producerOverrides(); !maps.Equal(got, map[string]any{"client.id": "c1"}) {
		t.Errorf("producer overrides %v", got)
	}
	if n := len((groupFlags{}).runOptions()); n != 0 {
		t.Errorf("%d run options without --drain-timeout, want none", n)
	}
	if n := len((groupFlags{drainTimeout: time.Second}).runOptions()); n != 1 {
		t.Errorf("%d run options with --drain-timeout, want 1", n)
	}
}
