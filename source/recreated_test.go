package source

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// The log lines librdkafka (v2.11.1) writes when a topic's ID changes
// (rd_kafka_topic_metadata_update, debug context "metadata"): from the
// all-zero ID at the first metadata of a topic, and from a known ID to
// another once the topic was deleted and created again.
func TestRecreatedTopic(t *testing.T) {
	for _, tc := range []struct {
		tag, msg string
		want, id string
	}{
		{"METADATA", "[thrd:main]: Topic orders changed id from LipfQUdmF90at/xQzcaFSw to XaHnyk5tgPBgwIoL3IOGDA", "orders", "XaHnyk5tgPBgwIoL3IOGDA"},
		{"METADATA", "[thrd:main]: Topic a.b-c_1 changed id from LipfQUdmF90at/xQzcaFSw to XaHnyk5tgPBgwIoL3IOGDA", "a.b-c_1", "XaHnyk5tgPBgwIoL3IOGDA"},
		{"METADATA", "[thrd:main]: Topic orders changed id from AAAAAAAAAAAAAAAAAAAAAA to XaHnyk5tgPBgwIoL3IOGDA", "", ""},
		{"METADATA", "[thrd:main]: Topic orders changed id from XaHnyk5tgPBgwIoL3IOGDA to XaHnyk5tgPBgwIoL3IOGDA", "", ""},
		{"METADATA", "[thrd:main]: Topic orders [0] Leader 0 Epoch 0", "", ""},
		{"METADATA", "[thrd:main]: Topic orders changed id from LipfQUdmF90at/xQzcaFSw", "", ""},
		{"TOPIC", "[thrd:main]: Topic orders changed id from LipfQUdmF90at/xQzcaFSw to XaHnyk5tgPBgwIoL3IOGDA", "", ""},
	} {
		got, id, ok := recreatedTopic(kafka.LogEvent{Tag: tc.tag, Message: tc.msg, Level: 7})
		if got != tc.want || id != tc.id || ok != (tc.want != "") {
			t.Errorf("recreatedTopic(%s %q) = %q, %q, %v; want %q, %q", tc.tag, tc.msg, got, id, ok, tc.want, tc.id)
		}
	}
}

func TestWithMetadataDebug(t *testing.T) {
	for _, tc := range []struct {
		in       any
		want     string
		userWant bool
	}{
		{nil, "metadata", false},
		{"", "metadata", false},
		{"cgrp,fetch", "cgrp,fetch,metadata", true},
		{"cgrp, metadata", "cgrp, metadata", true},
		{"all", "all", true},
	} {
		got, user := withMetadataDebug(tc.in)
		if got != tc.want || user != tc.userWant {
			t.Errorf("withMetadataDebug(%v) = %q, %v; want %q, %v", tc.in, got, user, tc.want, tc.userWant)
		}
	}
}

// forwardLogs hands recreated topics over whether or not debug lines are
// forwarded, and forwards debug lines only when Overrides asked for them.
func TestForwardLogsRecreated(t *testing.T) {
	for _, debug := range []bool{false, true} {
		ch := make(chan kafka.LogEvent, 3)
		ch <- kafka.LogEvent{Tag: "METADATA", Level: 7, Message: "[thrd:main]: Topic orders changed id from LipfQUdmF90at/xQzcaFSw to XaHnyk5tgPBgwIoL3IOGDA"}
		ch <- kafka.LogEvent{Tag: "METADATA", Level: 7, Message: "[thrd:main]: Topic orders [0] Leader 0 Epoch 0"}
		ch <- kafka.LogEvent{Tag: "FAIL", Level: 3, Message: "broker down"}
		close(ch)
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		var topics []string
		done := make(chan struct{})
		forwardLogs(log, ch, make(chan struct{}), done, func(topic, id string) { topics = append(topics, topic+" "+id) }, debug)
		<-done
		if len(topics) != 1 || topics[0] != "orders XaHnyk5tgPBgwIoL3IOGDA" {
			t.Errorf("debug=%v: recreated topics %v, want [orders XaHnyk5tgPBgwIoL3IOGDA]", debug, topics)
		}
		want := 1
		if debug {
			want = 3
		}
		if n := strings.Count(buf.String(), "\n"); n != want {
			t.Errorf("debug=%v: %d lines forwarded, want %d", debug, n, want)
		}
	}
}

func TestRecreatedTopicsTake(t *testing.T) {
	var s recreatedTopics
	if got := s.take(); len(got) != 0 {
		t.Fatalf("take of nothing = %v", got)
	}
	s.add("a", "id1")
	s.add("a", "id2")
	if !s.waiting.Load() {
		t.Fatal("any not set by add")
	}
	if got := s.take(); len(got) != 1 || got["a"] != "id2" {
		t.Fatalf("take = %v, want map[a:id2] (the later report)", got)
	}
	if s.waiting.Load() || len(s.take()) != 0 {
		t.Fatal("take did not forget")
	}
}
