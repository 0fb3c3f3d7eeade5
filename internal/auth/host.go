package auth

import (
	"net/netip"
	"strconv"
	"strings"
)

// hostPattern is an account's host part, compiled for matching client addresses the way a
// server started with skip-name-resolve matches them: SQL LIKE patterns over the client's
// IP address in text, IP/netmask (and IP/prefix length) forms, and the loopback names.
type hostPattern struct {
	// specificity orders the accounts of a name, highest first, as MariaDB's get_sort does:
	// 128 for a host without wildcards (an address, a name, a netmask form), else the
	// 1-based position of its first wildcard, so that "10.0.0.%" (8) comes before "%" (1).
	specificity int
	// loopback: the pattern is localhost, 127.0.0.1 or ::1, which a loopback client matches.
	loopback bool
	// net and mask are the IP/netmask form; mask is empty otherwise.
	net  netip.Addr
	mask []byte
	// like is the LIKE pattern, empty for a netmask form or an empty host (which matches
	// nothing).
	like []likeToken
}

// likeToken is one element of a LIKE pattern: a byte to match (lower-cased), or a wildcard.
type likeToken struct {
	c    byte
	kind byte // likeByte, likeOne ('_') or likeMany ('%')
}

const (
	likeByte = iota
	likeOne
	likeMany
)

// compileHost compiles an account's host part.
func compileHost(host string) hostPattern {
	p := hostPattern{specificity: 128}
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1", "::1":
		p.loopback = true
	}
	if ip, mask, ok := parseNetmask(host); ok {
		p.net, p.mask = ip, mask
		return p
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c == '\\' && i+1 < len(host):
			i++
			p.like = append(p.like, likeToken{c: lower(host[i])})
		case c == '%' || c == '_':
			if p.specificity == 128 {
				p.specificity = min(i+1, 127)
			}
			kind := byte(likeOne)
			if c == '%' {
				kind = likeMany
			}
			p.like = append(p.like, likeToken{kind: kind})
		default:
			p.like = append(p.like, likeToken{c: lower(c)})
		}
	}
	return p
}

// parseNetmask reads "10.0.0.0/255.0.0.0", or the prefix-length form "10.0.0.0/8" that
// MySQL 8 also accepts.
func parseNetmask(host string) (netip.Addr, []byte, bool) {
	ipText, maskText, ok := strings.Cut(host, "/")
	if !ok {
		return netip.Addr{}, nil, false
	}
	ip, err := netip.ParseAddr(ipText)
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, nil, false
	}
	ip = ip.Unmap()
	if m, err := netip.ParseAddr(maskText); err == nil {
		m = m.Unmap()
		if m.BitLen() != ip.BitLen() {
			return netip.Addr{}, nil, false
		}
		return ip, m.AsSlice(), true
	}
	bits, err := strconv.Atoi(maskText)
	if err != nil || bits < 0 || bits > ip.BitLen() {
		return netip.Addr{}, nil, false
	}
	mask := make([]byte, ip.BitLen()/8)
	for i := range bits {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return ip, mask, true
}

// matches reports whether a client at from matches the pattern. text is from in the form
// the server compares patterns with: the address without zone, IPv4-mapped addresses as
// IPv4, "" when from is not valid (which then matches only patterns of wildcards).
func (p *hostPattern) matches(from netip.Addr, text string) bool {
	if p.loopback && from.IsLoopback() {
		return true
	}
	if len(p.mask) > 0 {
		if !from.IsValid() || from.BitLen() != p.net.BitLen() {
			return false
		}
		ip, net := from.AsSlice(), p.net.AsSlice()
		for i := range ip {
			if ip[i]&p.mask[i] != net[i] {
				return false
			}
		}
		return true
	}
	return len(p.like) > 0 && likeMatch(p.like, text)
}

// clientText is the text form of a client address that host patterns are matched against.
func clientText(from netip.Addr) (netip.Addr, string) {
	if !from.IsValid() {
		return from, ""
	}
	from = from.Unmap().WithZone("")
	return from, strings.ToLower(from.String())
}

// likeMatch matches s against a LIKE pattern: greedy on '%', going back to the last '%'
// on a mismatch, which takes time proportional to len(p)·len(s) at worst.
func likeMatch(p []likeToken, s string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi].kind == likeMany:
			star, mark = pi, si
			pi++
		case pi < len(p) && (p[pi].kind == likeOne || p[pi].c == lower(s[si])):
			pi++
			si++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi].kind == likeMany {
		pi++
	}
	return pi == len(p)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
