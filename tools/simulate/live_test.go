package simulate

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// rasStatus asks a RAS service for its STATUS as the nccl receiver does (NVIDIA/nccl
// src/ras/client_support.cc: CLIENT PROTOCOL, SET FORMAT json, STATUS, then the document until the
// service closes the connection).
func rasStatus(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	rd := bufio.NewReader(c)
	for _, cmd := range []string{"CLIENT PROTOCOL 2", "SET FORMAT json"} {
		_, err := fmt.Fprintf(c, "%s\n", cmd)
		require.NoError(t, err)
		_, err = rd.ReadString('\n')
		require.NoError(t, err)
	}
	_, err = fmt.Fprint(c, "STATUS\n")
	require.NoError(t, err)
	b, err := io.ReadAll(rd)
	require.NoError(t, err)
	return string(b)
}

// TestLiveFeedsTheModel: the live feed of the demo writes, sample by sample, exactly what
// WriteNCCL writes at once for the same samples (each node's Inspector dump, record by record), and
// each node's RAS service answers with the job's status at the newest sample (RASStatus): the dead
// rank of nccl_rank_dies appears at the sample its phase begins, counted in samples. A new lap
// starts the job over.
func TestLiveFeedsTheModel(t *testing.T) {
	cases := LiveNCCLCases()
	require.NotEmpty(t, cases)
	var names []string
	for _, c := range cases {
		names = append(names, c.Name)
	}
	assert.Contains(t, names, "nccl_rank_dies")
	assert.Contains(t, names, "nccl_transition_tcp_fallback")

	interval := time.Second
	samples := scenario.TransitionFault + 5
	o := Options{Dir: t.TempDir(), Interval: interval, Samples: samples}
	live, err := StartLive(o, cases)
	require.NoError(t, err)
	defer func() { require.NoError(t, live.Close()) }()
	require.Len(t, live.RAS(), 2*len(cases))

	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	dies := caseNamedIn(t, cases, "nccl_rank_dies")
	host := scenario.HostName(dies, scenario.Nodes[0])
	for i := range samples {
		require.Equal(t, i, live.Sample())
		require.NoError(t, live.Step(start.Add(time.Duration(i)*interval)))
		if i == scenario.TransitionFault-1 || i == scenario.TransitionFault {
			assert.Equal(t, RASStatus(dies, i, interval), rasStatus(t, live.RAS()[host]), "sample %d", i)
		}
	}
	assert.Contains(t, RASStatus(dies, scenario.TransitionFault-1, interval), `"missing_ranks_count": 0`, "before the rank dies")
	assert.Contains(t, RASStatus(dies, scenario.TransitionFault, interval), `"considered_dead": true`, "from the sample its phase begins")
	for _, c := range cases {
		for n := range scenario.Nodes {
			b, err := os.ReadFile(filepath.Join(o.Dir, c.Name, "nccl", inspectorDumpName(c, n)))
			require.NoError(t, err)
			assert.Equal(t, InspectorDump(c, n, samples, interval, start), string(b), "%s node %d", c.Name, n)
		}
	}

	// The next lap: the dumps start over with the job.
	require.Equal(t, 0, live.Sample())
	at := start.Add(time.Duration(samples) * interval)
	require.NoError(t, live.Step(at))
	for _, c := range cases {
		b, err := os.ReadFile(filepath.Join(o.Dir, c.Name, "nccl", inspectorDumpName(c, 0)))
		require.NoError(t, err)
		assert.Equal(t, InspectorDump(c, 0, 1, interval, at), string(b), "%s: a new lap", c.Name)
	}
	assert.Equal(t, RASStatus(dies, 0, interval), rasStatus(t, live.RAS()[host]))
}

func caseNamedIn(t *testing.T, cases []scenario.Case, name string) scenario.Case {
	t.Helper()
	for _, c := range cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no case %s", name)
	return scenario.Case{}
}
