package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import "math/bits"

// sizeBuckets are the message-size buckets: powers of four from 64 KiB to 4 GiB, with one bucket
// below and one above, so that a communicator has at most len(sizeBuckets) series per collective
// type whatever sizes it runs. The Inspector's own Prometheus mode labels a linear range within a
// unit (inspector_prom.cc inspectorPromFormatMessageSizeRange: "4-5GB"), up to 1023 values a unit;
// nccl-tests sweeps by factors of two (-f 2), so powers of four keep two sweep points a bucket.
var sizeBuckets = [...]string{
	"<64KiB", "64KiB-256KiB", "256KiB-1MiB", "1MiB-4MiB", "4MiB-16MiB", "16MiB-64MiB",
	"64MiB-256MiB", "256MiB-1GiB", "1GiB-4GiB", ">=4GiB",
}

// sizeBucket names the bucket of a message of n bytes.
func sizeBucket(n uint64) string {
	const first = 16 // 64 KiB = 2^16
	if n < 1<<first {
		return sizeBuckets[0]
	}
	i := 1 + (bits.Len64(n)-1-first)/2
	if i >= len(sizeBuckets) {
		i = len(sizeBuckets) - 1
	}
	return sizeBuckets[i]
}
