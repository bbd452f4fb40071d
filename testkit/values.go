package testkit

import "strconv"

// Values returns n payloads, the decimal texts "0" to "n-1" (the value of
// the record at offset i is i when they are the first sent to a
// partition): what a test sends when only the number of records matters.
func Values(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(strconv.Itoa(i))
	}
	return out
}
