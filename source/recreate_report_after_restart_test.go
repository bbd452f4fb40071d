package source

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// librdkafka may report a recreated topic's new ID only after the source
// started the partitions anew in that very topic, and after records of
// it were delivered: when the topic is recreated again before
// librdkafka's metadata shows it (see recreated.go). Such a report must
// leave the partitions alone: every record of the new topic is delivered
// once, and the group's commit is exactly what was processed of it. The
// report is handed to the source as its log goroutine would, once the
// source started the partition anew in the topic it names.
func TestTopicRecreatedReportedAfterRestart(t *testing.T) {
	const topic, group = "orders", "g"
	b := kafkatest.NewBroker(t)
	src := newSource(t, b, group, topic, nil)
	reports := make(chan func(topic, id string), 1)
	src.reportRecreated = func(report func(topic, id string)) { reports <- report }
	served := make(chan string, 64)
	src.servedRecreated = func(topic, id string) { served <- topic + " " + id }

	b.CreateTopic(t, topic, 1)
	b.Produce(t, topic, kafkadriver.Numbered("old-%d", 0, 5)...)
	r := kafkadriver.StartRun(t, src, kafkadriver.RunOptions{
		Key: func(rec sluice.Record) string {
			return fmt.Sprintf("%s@%d/%d", rec.Value, rec.Partition, rec.Offset)
		},
		Once: func(v string) bool { return strings.HasPrefix(v, "new-") },
	})
	var report func(topic, id string)
	select {
	case report = <-reports:
	case <-time.After(kafkadriver.RecreateWait):
		t.Fatalf("Run did not start within %v", kafkadriver.RecreateWait)
	}
	old := map[string]bool{}
	for i := range 5 {
		old[fmt.Sprintf("old-%d@0/%d", i, i)] = true
	}
	r.Await(old)
	b.WaitCommitted(t, group, topic, map[int32]int64{0: 5})

	kafkadriver.RecreateTopic(t, b, topic, 1)
	id := topicID(t, b, topic)
	awaitServed(t, served, topic+" "+id) // librdkafka's own report: the partition starts anew in topic id
	produce := kafkadriver.NewProducer(t, b, topic)
	want := map[string]bool{}
	for i := range 7 {
		produce(0, fmt.Sprintf("new-%d", i))
		want[fmt.Sprintf("new-%d@0/%d", i, i)] = true
	}
	r.Await(want)

	report(topic, id)
	awaitServed(t, served, topic+" "+id)
	// Had the report started the partition anew, records 0 to 6 would
	// come again before record 7.
	produce(0, "new-7")
	r.Await(map[string]bool{"new-7@0/7": true})
	r.Stop()
	if got, want := b.Committed(t, group, topic), map[int32]int64{0: 8}; !maps.Equal(got, want) {
		t.Fatalf("committed offsets of %s = %v, want %v", topic, got, want)
	}
}

// topicID returns topic's ID on b, base64 as librdkafka writes it.
func topicID(t *testing.T, b *kafkatest.Broker, topic string) string {
	t.Helper()
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
	defer cancel()
	topics, err := adm.ListTopics(ctx, topic)
	if err == nil {
		err = topics.Error()
	}
	if err != nil {
		t.Fatalf("topic ID of %s: %v", topic, err)
	}
	id := topics[topic].ID
	return base64.RawStdEncoding.EncodeToString(id[:])
}

// awaitServed waits until the source served a report of a recreated
// topic reading want ("topic id"), within kafkadriver.RecreateWait.
func awaitServed(t *testing.T, served <-chan string, want string) {
	t.Helper()
	deadline := time.After(kafkadriver.RecreateWait)
	for {
		select {
		case got := <-served:
			if got == want {
				return
			}
		case <-deadline:
			t.Fatalf("report %q not served within %v", want, kafkadriver.RecreateWait)
		}
	}
}
