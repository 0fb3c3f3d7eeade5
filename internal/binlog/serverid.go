package binlog

import (
	"encoding/binary"
	"hash/fnv"
	"os"
	"sync/atomic"
)

// followers counts the followers this process has made, so that two of them (two proxies
// in one test process) never share an id.
var followers atomic.Uint32

// ServerID derives a follower's server_id from what tells it apart: the host's name, the
// address the proxy listens on, the process and the followers it made before. Two proxies,
// on one host or on two, register as different replicas (a primary that sees one server_id
// twice drops the first connection). The id lies in [2^30, 2^31), clear of the small ids
// servers are usually given; two proxies on two hosts share one with odds of one in 2^30.
func ServerID(host, listen string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(host))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(listen))
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(os.Getpid()))
	binary.LittleEndian.PutUint32(b[4:], followers.Add(1))
	_, _ = h.Write(b[:])
	return 1<<30 | h.Sum32()&(1<<30-1)
}
