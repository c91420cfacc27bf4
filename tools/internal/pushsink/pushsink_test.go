package pushsink

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// writeRequest encodes a remote-write 1.0 WriteRequest (prometheus prompb/remote.proto and
// types.proto) of series given as labels and sample timestamps.
func writeRequest(series map[int64][]string) []byte {
	var req []byte
	for ts, labels := range series {
		var s []byte
		for i := 0; i+1 < len(labels); i += 2 {
			var l []byte
			l = protowire.AppendTag(l, 1, protowire.BytesType)
			l = protowire.AppendString(l, labels[i])
			l = protowire.AppendTag(l, 2, protowire.BytesType)
			l = protowire.AppendString(l, labels[i+1])
			s = protowire.AppendTag(s, 1, protowire.BytesType)
			s = protowire.AppendBytes(s, l)
		}
		var smp []byte
		smp = protowire.AppendTag(smp, 1, protowire.Fixed64Type)
		smp = protowire.AppendFixed64(smp, math.Float64bits(42))
		smp = protowire.AppendTag(smp, 2, protowire.VarintType)
		smp = protowire.AppendVarint(smp, uint64(ts))
		s = protowire.AppendTag(s, 2, protowire.BytesType)
		s = protowire.AppendBytes(s, smp)
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendBytes(req, s)
	}
	return req
}

func TestMarkerStamps(t *testing.T) {
	marker := []string{"__name__", markerName, "component", "rnic", "device", markerDevice, "direction", "transmit"}
	other := []string{"__name__", markerName, "component", "rnic", "device", "mlx5_1/1", "direction", "transmit"}
	got, err := markerStamps(writeRequest(map[int64][]string{1000: marker, 2000: other}))
	require.NoError(t, err)
	assert.Equal(t, []int64{1000}, got)

	_, err = markerStamps([]byte{0x0a, 0x05, 0x01})
	assert.Error(t, err, "a truncated message")
}
