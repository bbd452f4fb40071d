package main

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestClientFlagRefusesUnknownValues(t *testing.T) {
	base := options{group: "g", input: "i", output: "o", dlq: "d", workers: 1, messages: 1}
	for _, c := range []string{"", "librdkafka", "franz"} {
		o := base
		o.client = c
		if err := o.validate(); err != nil {
			t.Errorf("--client=%q: validate: %v, want nil", c, err)
		}
	}
	for _, c := range []string{"sarama", "Franz", "franz-go", " librdkafka"} {
		o := base
		o.client = c
		want := fmt.Sprintf("--client=%q: want one of librdkafka, franz", c)
		if err := o.validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v, want an error containing %q", err, want)
		}
		if _, err := newBackend(o, []string{"127.0.0.1:1"}, slog.New(slog.DiscardHandler), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("newBackend: %v, want an error containing %q", err, want)
		}
	}
}

// TestFranzConsumerOpts applies the kgo options the flags map to onto a
// client (kgo.NewClient dials nothing) and reads them back.
func TestFranzConsumerOpts(t *testing.T) {
	for _, tc := range []struct {
		g          groupFlags
		balancer   string // the protocol name of the first balancer
		serverSide bool
		session    time.Duration // 0: kgo's default
		heartbeat  time.Duration
		clientID   string
	}{
		{g: groupFlags{}, balancer: "cooperative-sticky", clientID: "kgo"},
		{g: groupFlags{protocol: "cooperative-sticky", sessionTimeout: 4 * time.Second, clientID: "c1"},
			balancer: "cooperative-sticky", session: 4 * time.Second, heartbeat: 400 * time.Millisecond, clientID: "c1"},
		{g: groupFlags{protocol: "range", sessionTimeout: time.Second}, balancer: "range",
			session: time.Second, heartbeat: 100 * time.Millisecond, clientID: "kgo"},
		{g: groupFlags{protocol: "consumer", clientID: "c2"}, balancer: "sticky", serverSide: true, clientID: "c2"},
	} {
		t.Run(fmt.Sprintf("%+v", tc.g), func(t *testing.T) {
			def, err := kgo.NewClient(kgo.ConsumerGroup("g"))
			if err != nil {
				t.Fatal(err)
			}
			defer def.Close()
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.ConsumerGroup("g")}, tc.g.franzConsumerOpts()...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			bs, _ := cl.OptValue(kgo.Balancers).([]kgo.GroupBalancer)
			if len(bs) != 1 || bs[0].ProtocolName() != tc.balancer {
				t.Errorf("balancers %v, want only %s", bs, tc.balancer)
			}
			if got, _ := cl.OptValue(kgo.ServerSideBalancer).(bool); got != tc.serverSide {
				t.Errorf("ServerSideBalancer %v, want %v", got, tc.serverSide)
			}
			want := func(opt any, d time.Duration) time.Duration {
				if d == 0 {
					d, _ = def.OptValue(opt).(time.Duration)
				}
				return d
			}
			if got := cl.OptValue(kgo.SessionTimeout); got != want(kgo.SessionTimeout, tc.session) {
				t.Errorf("SessionTimeout %v, want %v", got, want(kgo.SessionTimeout, tc.session))
			}
			if got := cl.OptValue(kgo.HeartbeatInterval); got != want(kgo.HeartbeatInterval, tc.heartbeat) {
				t.Errorf("HeartbeatInterval %v, want %v", got, want(kgo.HeartbeatInterval, tc.heartbeat))
			}
			if got := cl.OptValue(kgo.ClientID); got != tc.clientID {
				t.Errorf("ClientID %v, want %q", got, tc.clientID)
			}
		})
	}
}
