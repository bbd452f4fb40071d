package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-go/sluice"
)

// recordMetrics counts records per topic as they flow through the graphs.
type recordMetrics struct {
	delivered, completed   *prometheus.CounterVec
	filtered, deadLettered *prometheus.CounterVec
	inflightRecords        prometheus.Gauge
	inflightBytes          prometheus.Gauge

	byTopic    *cache[string, topicCounters]
	filteredBy *cache[topicStage, prometheus.Counter]
	deadBy     *cache[topicStage, prometheus.Counter]
}

type topicCounters struct{ delivered, completed prometheus.Counter }

type topicStage struct{ topic, stage string }

func (r *recordMetrics) init(b *builder) {
	r.delivered = b.counterVec("sluice_records_delivered_total",
		"Records the source handed to the partition graphs (consumed).", "topic")
	r.completed = b.counterVec("sluice_records_completed_total",
		"Records that became committable: processed, filtered or dead-lettered.", "topic")
	r.filtered = b.counterVec("sluice_records_filtered_total",
		"Values a stage dropped (stages.Filter).", "topic", "stage")
	r.deadLettered = b.counterVec("sluice_records_dead_lettered_total",
		"Records delivered to the dead-letter destination, by the stage that found them invalid.", "topic", "stage")
	r.inflightRecords = b.gauge("sluice_inflight_records",
		"Records delivered but not yet committable, across all partitions.")
	r.inflightBytes = b.gauge("sluice_inflight_bytes",
		"Key and value bytes of the records in flight, across all partitions.")
	r.byTopic = newCache(func(topic string) topicCounters {
		return topicCounters{delivered: r.delivered.WithLabelValues(topic), completed: r.completed.WithLabelValues(topic)}
	})
	r.filteredBy = newCache(func(k topicStage) prometheus.Counter { return r.filtered.WithLabelValues(k.topic, k.stage) })
	r.deadBy = newCache(func(k topicStage) prometheus.Counter { return r.deadLettered.WithLabelValues(k.topic, k.stage) })
}

// OnRecordsDelivered implements [sluice.HookRecordsDelivered]: it adds n to
// sluice_records_delivered_total{topic}.
func (m *Metrics) OnRecordsDelivered(tp sluice.TopicPartition, n int) {
	m.records.byTopic.get(tp.Topic).delivered.Add(float64(n))
}

// OnRecordsCompleted implements [sluice.HookRecordsCompleted]: it adds n to
// sluice_records_completed_total{topic}.
func (m *Metrics) OnRecordsCompleted(tp sluice.TopicPartition, n int, _ int64) {
	m.records.byTopic.get(tp.Topic).completed.Add(float64(n))
}

// OnValuesFiltered implements [sluice.HookValuesFiltered]: it adds n to
// sluice_records_filtered_total{topic,stage}.
func (m *Metrics) OnValuesFiltered(tp sluice.TopicPartition, stage string, n int) {
	m.records.filteredBy.get(topicStage{tp.Topic, stage}).Add(float64(n))
}

// OnRecordDeadLettered implements [sluice.HookRecordDeadLettered]: it increments
// sluice_records_dead_lettered_total{topic,stage}.
func (m *Metrics) OnRecordDeadLettered(tp sluice.TopicPartition, stage string) {
	m.records.deadBy.get(topicStage{tp.Topic, stage}).Inc()
}

// OnInFlight implements [sluice.HookInFlight]: it sets sluice_inflight_records
// and sluice_inflight_bytes.
func (m *Metrics) OnInFlight(records, bytes int64) {
	m.records.inflightRecords.Set(float64(records))
	m.records.inflightBytes.Set(float64(bytes))
}
