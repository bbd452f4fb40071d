// Package headers converts Kafka record headers for the sources without an
// allocation per record: the header slices of many records are carved out
// of one shared array.
package headers

import "github.com/sluice-go/sluice"

// slabLen is how many headers one shared array holds (about 10 KiB).
const slabLen = 256

// Slab hands out header slices carved from shared arrays of slabLen
// headers, so that converting the headers of a polled record costs an
// allocation per slabLen headers instead of one per record. An array stays
// alive while any record whose headers it holds is referenced (a record a
// stage keeps keeps up to slabLen headers' worth of memory). Each slice
// is capped at its own length, so appending to one never writes into
// another record's headers. The zero Slab is ready to use; it is for one
// goroutine (a source's poll loop).
type Slab struct {
	free []sluice.Header
}

// Take returns a slice of n zero headers for one record to fill; nil when
// n is 0. A record with more than a quarter of slabLen headers gets an
// array of its own.
func (s *Slab) Take(n int) []sluice.Header {
	switch {
	case n <= 0:
		return nil
	case n > slabLen/4:
		return make([]sluice.Header, n)
	case n > len(s.free):
		s.free = make([]sluice.Header, slabLen)
	}
	h := s.free[:n:n]
	s.free = s.free[n:]
	return h
}

// Convert returns a client's record headers hs (kgo.RecordHeader and
// kafka.Header are both a struct of Key and Value) as pipeline headers
// carved out of s; nil when hs is empty.
func Convert[H ~struct {
	Key   string
	Value []byte
}](s *Slab, hs []H) []sluice.Header {
	out := s.Take(len(hs))
	for i, h := range hs {
		out[i] = sluice.Header(h)
	}
	return out
}
