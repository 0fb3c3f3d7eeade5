package binlog

import "hash/fnv"

// ServerID derives a follower's server_id from what tells the proxy apart on its network
// (the host's name and the address it listens on): two proxies, on one host or on two,
// register as different replicas, and a restarted proxy takes its own place again. The id
// lies in [2^30, 2^31), clear of the small ids servers are usually given; two proxies share
// one with odds of one in 2^30.
func ServerID(host, listen string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(host))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(listen))
	return 1<<30 | h.Sum32()&(1<<30-1)
}
