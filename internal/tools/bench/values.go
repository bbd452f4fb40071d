package main

import (
	"fmt"
	"hash/crc32"
)

// The input topics hold records whose content is a function of where they
// are: record o of partition p has key "p-o" and value valueOf(p, o, size).
// Producer (the broker child) and verifier (the parent) compute the same
// values, so the parent knows every partition's expected count and value
// hash sum without reading the topic.

// minValueSize is the smallest -value: the header "p/o;" must fit.
const minValueSize = 32

// castagnoli is the CRC-32C table (hardware accelerated on amd64 and
// arm64): a value's hash costs a few nanoseconds, the same in every case.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// valueHash is the hash the children sum per partition.
func valueHash(v []byte) uint64 { return uint64(crc32.Checksum(v, castagnoli)) }

// valueOf returns the value of record o of partition p: the header
// "p/o;" then letters that depend on p and o, size bytes in all.
func valueOf(p int32, o int64, size int) []byte {
	v := make([]byte, 0, size)
	v = fmt.Appendf(v, "%d/%d;", p, o)
	for i := len(v); i < size; i++ {
		v = append(v, byte('a'+(int64(i)+o+int64(p))%26))
	}
	return v[:size]
}

// keyOf returns the key of record o of partition p.
func keyOf(p int32, o int64) []byte { return fmt.Appendf(nil, "%d-%d", p, o) }

// parseHeader reads the partition and offset a value was made for (its
// "p/o;" header); ok is false if v has no such header.
func parseHeader(v []byte) (p int32, o int64, ok bool) {
	var n int64
	digits := 0
	i := 0
	for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		n = n*10 + int64(v[i]-'0')
		digits++
	}
	if digits == 0 || digits > 9 || i >= len(v) || v[i] != '/' {
		return 0, 0, false
	}
	p = int32(n)
	n, digits = 0, 0
	for i++; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		n = n*10 + int64(v[i]-'0')
		digits++
	}
	if digits == 0 || digits > 18 || i >= len(v) || v[i] != ';' {
		return 0, 0, false
	}
	return p, n, true
}

// layout is how the records of a topic are spread: record i of the
// workload goes to partition i % partitions, so partition p holds
// records/partitions records, one more for the first records%partitions.
type layout struct {
	records    int
	partitions int
	valueSize  int
}

// count returns how many records partition p holds (its end offset).
func (l layout) count(p int) int64 {
	n := l.records / l.partitions
	if p < l.records%l.partitions {
		n++
	}
	return int64(n)
}

// expectedHashes returns the value hash sum of every partition.
func (l layout) expectedHashes() []uint64 {
	sums := make([]uint64, l.partitions)
	for p := range l.partitions {
		for o := range l.count(p) {
			sums[p] += valueHash(valueOf(int32(p), o, l.valueSize))
		}
	}
	return sums
}
