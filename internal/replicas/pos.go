package replicas

import (
	"fmt"
	"strconv"
	"strings"
)

// GTID is one MariaDB global transaction id, domain-server-sequence. Within a domain the
// sequence numbers grow, whichever server wrote them, so a server that has applied
// sequence n of a domain has applied every earlier one of that domain.
type GTID struct {
	Domain uint32
	Server uint32
	Seq    uint64
}

func (g GTID) String() string {
	return fmt.Sprintf("%d-%d-%d", g.Domain, g.Server, g.Seq)
}

// ParseGTID reads a GTID written as MariaDB writes it: 0-1-15.
func ParseGTID(s string) (GTID, error) {
	parts := strings.Split(strings.TrimSpace(s), "-")
	if len(parts) != 3 {
		return GTID{}, fmt.Errorf("replicas: %q is not a GTID (domain-server-sequence)", s)
	}
	d, err1 := strconv.ParseUint(parts[0], 10, 32)
	sv, err2 := strconv.ParseUint(parts[1], 10, 32)
	seq, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return GTID{}, fmt.Errorf("replicas: %q is not a GTID (domain-server-sequence)", s)
	}
	return GTID{Domain: uint32(d), Server: uint32(sv), Seq: seq}, nil
}

// Pos is a replication position: the highest sequence number applied in each domain, in
// the order of the domains. The zero Pos has applied nothing. A Pos is not changed once
// shared: Merge returns a new one.
type Pos []GTID

// ParsePos reads a position as @@gtid_slave_pos and @@gtid_binlog_pos give it:
// 0-1-15,1-2-7, or the empty string.
func ParsePos(s string) (Pos, error) {
	var p Pos
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		g, err := ParseGTID(part)
		if err != nil {
			return nil, err
		}
		p = p.With(g)
	}
	return p, nil
}

func (p Pos) String() string {
	parts := make([]string, len(p))
	for i, g := range p {
		parts[i] = g.String()
	}
	return strings.Join(parts, ",")
}

// seq returns the sequence number applied in domain d.
func (p Pos) seq(d uint32) uint64 {
	for _, g := range p {
		if g.Domain == d {
			return g.Seq
		}
	}
	return 0
}

// Has tells whether p includes g.
func (p Pos) Has(g GTID) bool { return p.seq(g.Domain) >= g.Seq }

// Covers tells whether p includes everything o does.
func (p Pos) Covers(o Pos) bool {
	for _, g := range o {
		if !p.Has(g) {
			return false
		}
	}
	return true
}

// With returns p with g included: a new Pos when g is news to p, p itself otherwise.
func (p Pos) With(g GTID) Pos {
	for i, h := range p {
		if h.Domain != g.Domain {
			continue
		}
		if h.Seq >= g.Seq {
			return p
		}
		q := append(Pos(nil), p...)
		q[i] = g
		return q
	}
	q := make(Pos, 0, len(p)+1)
	i := 0
	for i < len(p) && p[i].Domain < g.Domain {
		i++
	}
	q = append(append(append(q, p[:i]...), g), p[i:]...)
	return q
}

// Merge returns a position that includes both p and o.
func (p Pos) Merge(o Pos) Pos {
	for _, g := range o {
		p = p.With(g)
	}
	return p
}

// Behind counts the transactions o has that p has not, over all domains.
func (p Pos) Behind(o Pos) uint64 {
	var n uint64
	for _, g := range o {
		if s := p.seq(g.Domain); s < g.Seq {
			n += g.Seq - s
		}
	}
	return n
}
