package cache

import (
	"slices"
	"unsafe"
)

// The store's fixed costs, in bytes, beside the sizes of what an entry holds.
const (
	// nodeBytes is the store's record of one entry.
	nodeBytes = int64(unsafe.Sizeof(node{}))
	// entryBytes is the Entry the caller allocated, which the store keeps alive.
	entryBytes = int64(unsafe.Sizeof(Entry{}))
	// linkBytes is one entry's link into one table's list.
	linkBytes = int64(unsafe.Sizeof(tableLink{}))
	// stringBytes is a string header, one element of Entry.Tables.
	stringBytes = int64(unsafe.Sizeof(""))
	// nodeSlotBytes is an entry's share of its shard's map[uint64]*node: a 16-byte slot
	// and a control byte, in a table kept between 7/16 and 7/8 full and rebuilt when it
	// falls under half its peak.
	nodeSlotBytes = 48
	// heapSlotBytes is an entry's share of its shard's heap: an 8-byte pointer in a slice
	// whose capacity is kept under twice its length.
	heapSlotBytes = 16
	// tableSlotBytes is one table's share of a shard's map[string]*tableLink: a 24-byte
	// slot and a control byte, in a table between 7/16 and 7/8 full.
	tableSlotBytes = 64
)

// sizeClasses are the Go allocator's small object sizes (runtime/sizeclasses.go). An
// allocation takes the smallest class that holds it; a larger one takes whole 8 KiB pages.
var sizeClasses = []int64{
	8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280,
	1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528,
	6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072,
	20480, 21760, 24576, 27264, 28672, 32768,
}

// pageBytes is the unit of the allocator's large objects.
const pageBytes = 8192

// allocBytes is what the allocator hands out for a request of n bytes.
func allocBytes(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if i, _ := slices.BinarySearch(sizeClasses, n); i < len(sizeClasses) {
		return sizeClasses[i]
	}
	return (n + pageBytes - 1) / pageBytes * pageBytes
}

// Fixed per-entry charge: the node, the Entry and the entry's map and heap slots.
var fixedBytes = allocBytes(nodeBytes) + allocBytes(entryBytes) + nodeSlotBytes + heapSlotBytes

// chargeOf is what an entry under key costs the store, its table index slots aside: the
// fixed charge, the key's copy, the response's backing array, and the table names with
// their slice and the entry's links into the index.
func chargeOf(key string, e *Entry) int64 {
	c := fixedBytes + allocBytes(int64(len(key))) + allocBytes(int64(cap(e.Response)))
	if len(e.Tables) > 0 {
		c += allocBytes(int64(cap(e.Tables))*stringBytes) + allocBytes(int64(len(e.Tables))*linkBytes)
		for _, t := range e.Tables {
			c += allocBytes(int64(len(t)))
		}
	}
	return c
}

// tableBytes is what a table in a shard's index costs while any entry names it: its map
// slot and its name, which the index key keeps alive.
func tableBytes(table string) int64 {
	return tableSlotBytes + allocBytes(int64(len(table)))
}

// indexBound is the most that putting e can add to a shard's index: every table new.
func indexBound(e *Entry) int64 {
	var c int64
	for _, t := range e.Tables {
		c += tableBytes(t)
	}
	return c
}
