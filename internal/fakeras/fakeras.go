// Package fakeras is a stand-in for the NCCL RAS service's client socket (NCCL 2.24+, JSON
// output since 2.28.7): the STATUS document as NCCL formats it and a server on loopback that
// speaks the client protocol of src/ras/client_support.cc (NVIDIA/nccl). The nccl receiver's tests,
// the simulator and the end-to-end tests use it.
package fakeras // import "github.com/otelcol-iclens/otelcol-iclens/internal/fakeras"

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
)

// Rank is one rank of a RAS STATUS.
type Rank struct {
	Rank, PID, CudaDev int
	Host               string
	InitState          int // ncclResult_t; 7 is ncclInProgress
	AsyncError         int
	Finalized, Aborted bool
	Counts             map[string]uint64 // collective -> operations launched
	Missing            bool              // reported under missing_ranks
	Unresponsive, Dead bool
}

// Comm is one communicator of a RAS STATUS.
type Comm struct {
	Hash  string
	Size  int
	Ranks []Rank
}

// rasFunctions are the collective_counts keys: the first NCCL_NUM_FUNCTIONS (5, "Send/Recv not
// included for now") of ncclFunc_t in order (src/include/nccl_common.h), named by
// ncclFuncToString (src/collectives.cc).
var rasFunctions = []string{"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"}

// StatusJSON formats a STATUS document as NCCL 2.28.7+ sends it in JSON (src/ras/
// client_support.cc rasDumpCommsToJSON: jsonWriteHeader, jsonStartCommunicator,
// jsonWriteRankData, jsonWriteMissingRank, jsonEndCommunicator, jsonWriteFooter).
func StatusJSON(version string, comms []Comm) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n  \"nccl_version\": \"%s\",\n  \"cuda_runtime_version\": 12090,\n  \"cuda_driver_version\": 13000,\n", version)
	fmt.Fprintf(&b, "  \"timestamp\": \"2026-12-01 23:00:00\",\n  \"communicators_count\": %d,\n  \"communicators\": [\n", len(comms))
	for ci, c := range comms {
		var present, missing []Rank
		for _, r := range c.Ranks {
			if r.Missing {
				missing = append(missing, r)
			} else {
				present = append(present, r)
			}
		}
		if ci > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "    {\n      \"hash\": \"%s\",\n      \"secondary_hash\": \"0x1:0x2\",\n      \"size\": %d,\n      \"ranks_count\": %d,\n      \"missing_ranks_count\": %d,\n      \"ranks\": [\n",
			c.Hash, c.Size, len(present), len(missing))
		for ri, r := range present {
			if ri > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(&b, "        {\n          \"rank\": %d,\n          \"host\": \"%s\",\n          \"pid\": %d,\n          \"cuda_dev\": %d,\n          \"nvml_dev\": %d,\n",
				r.Rank, r.Host, r.PID, r.CudaDev, r.CudaDev)
			fmt.Fprintf(&b, "          \"status\": {\n            \"init_state\": %d,\n            \"async_error\": %d,\n            \"finalize_called\": %t,\n            \"destroy_flag\": false,\n            \"abort_flag\": %t\n          },\n",
				r.InitState, r.AsyncError, r.Finalized, r.Aborted)
			b.WriteString("          \"collective_counts\": {\n")
			for i, f := range rasFunctions {
				fmt.Fprintf(&b, "            \"%s\": %d", f, r.Counts[f])
				if i < len(rasFunctions)-1 {
					b.WriteString(",")
				}
				b.WriteString("\n")
			}
			b.WriteString("          }\n        }")
		}
		b.WriteString("\n      ],\n      \"missing_ranks\": [\n")
		for mi, r := range missing {
			if mi > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(&b, "        {\n          \"rank\": %d,\n          \"host\": \"%s\",\n          \"pid\": %d,\n          \"cuda_dev\": %d,\n          \"nvml_dev\": %d,\n",
				r.Rank, r.Host, r.PID, r.CudaDev, r.CudaDev)
			fmt.Fprintf(&b, "          \"status\": {\n            \"unresponsive\": %t,\n            \"considered_dead\": %t\n          }\n        }", r.Unresponsive, r.Dead)
		}
		b.WriteString("\n      ]\n    }")
	}
	b.WriteString("\n  ],\n  \"ras\": {\n    \"collection_time_sec\": 0.012,\n    \"timeouts_count\": 0\n  }\n}\n")
	return b.String()
}

// Server is a RAS client socket on loopback. Mode "" answers as NCCL 2.28.7+ does; "silent"
// accepts and never answers; "pre2287" refuses SET FORMAT as NCCL before 2.28.7 does.
type Server struct {
	ln     net.Listener
	mode   string
	mu     sync.Mutex
	status string
	served int // STATUS documents sent
	conns  []net.Conn
	wg     sync.WaitGroup
}

// Listen starts a server on 127.0.0.1 (port 0: any free port).
func Listen(addr, mode string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, mode: mode}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Set replaces the STATUS document the server sends.
func (s *Server) Set(status string) {
	s.mu.Lock()
	s.status = status
	s.mu.Unlock()
}

// Served is how many STATUS documents the server has sent: a test waits for a client's query
// in queries, not in time.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// Close stops the server and drops its connections.
func (s *Server) Close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(c)
		}()
	}
}

// handle answers one client as rasClientEventLoop does: "CLIENT PROTOCOL n" -> "SERVER PROTOCOL
// 2", "SET FORMAT json" -> "OK", "STATUS" -> the document, then the connection is closed
// (RAS_CLIENT_FINISHED, rasClientTerminate); anything else -> "ERROR: Unknown command ...".
func (s *Server) handle(c net.Conn) {
	defer c.Close()
	rd := bufio.NewReader(c)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		if s.mode == "silent" {
			continue
		}
		cmd := strings.TrimRight(line, "\r\n")
		lower := strings.ToLower(cmd)
		switch {
		case strings.HasPrefix(lower, "client protocol "):
			fmt.Fprint(c, "SERVER PROTOCOL 2\n")
		case lower == "set format json" && s.mode != "pre2287":
			fmt.Fprint(c, "OK\n")
		case lower == "status":
			s.mu.Lock()
			st := s.status
			s.mu.Unlock()
			fmt.Fprint(c, st)
			s.mu.Lock()
			s.served++
			s.mu.Unlock()
			return
		default:
			fmt.Fprintf(c, "ERROR: Unknown command %s\n", cmd)
		}
	}
}
