package auth

import (
	"net/netip"
	"testing"
)

func TestLookupHost(t *testing.T) {
	mixed := []string{"%", "10.0.0.%", "10.0.0.5", "localhost", "192.168.1.0/255.255.255.0"}
	tests := []struct {
		name  string
		hosts []string // accounts of the user app, in mysql.user order
		from  string   // client address; "" for none
		want  string   // host of the account found; "" for none
	}{
		{"exact beats pattern", mixed, "10.0.0.5", "10.0.0.5"},
		{"pattern beats any", mixed, "10.0.0.6", "10.0.0.%"},
		{"any", mixed, "10.0.1.1", "%"},
		{"IPv4-mapped", mixed, "::ffff:10.0.0.5", "10.0.0.5"},
		{"localhost from 127.0.0.1", mixed, "127.0.0.1", "localhost"},
		{"localhost from ::1", mixed, "::1", "localhost"},
		{"localhost from 127.0.0.2", mixed, "127.0.0.2", "localhost"},
		{"netmask", mixed, "192.168.1.77", "192.168.1.0/255.255.255.0"},
		{"outside netmask", mixed, "192.168.2.1", "%"},
		{"no address", mixed, "", "%"},

		{"no match", []string{"10.0.0.%"}, "10.0.1.1", ""},
		{"longer prefix first", []string{"%", "10.%", "10.0.%"}, "10.0.1.1", "10.0.%"},
		{"equal specificity in given order", []string{"%5", "%"}, "10.0.0.5", "%5"},
		{"one wildcard", []string{"10.0.0._"}, "10.0.0.7", "10.0.0._"},
		{"one wildcard is one character", []string{"10.0.0._"}, "10.0.0.77", ""},
		{"wildcard in the middle", []string{"10.%.1"}, "10.200.3.1", "10.%.1"},
		{"escaped dot is a dot", []string{`10\.0\.0\.1`}, "10.0.0.1", `10\.0\.0\.1`},
		{"escaped percent is literal", []string{`10.0.0.\%`}, "10.0.0.1", ""},
		{"prefix length", []string{"10.0.0.0/8"}, "10.200.1.1", "10.0.0.0/8"},
		{"prefix length outside", []string{"10.0.0.0/8"}, "11.0.0.1", ""},
		{"netmask needs the family", []string{"10.0.0.0/255.0.0.0"}, "2001:db8::1", ""},
		{"netmask with host bits set matches nothing", []string{"10.0.0.1/255.0.0.0"}, "10.0.0.1", ""},
		{"IPv6 literal", []string{"2001:DB8::1"}, "2001:db8::1", "2001:DB8::1"},
		{"IPv6 pattern", []string{"2001:db8::%"}, "2001:db8::42", "2001:db8::%"},
		{"IPv6 zone ignored", []string{"fe80::1"}, "fe80::1%eth0", "fe80::1"},
		{"127.0.0.1 from ::1", []string{"127.0.0.1"}, "::1", "127.0.0.1"},
		{"::1 from 127.0.0.1", []string{"::1"}, "127.0.0.1", "::1"},
		{"localhost in capitals", []string{"LocalHost"}, "127.0.0.1", "LocalHost"},
		{"localhost not from afar", []string{"localhost"}, "10.0.0.1", ""},
		{"localhost not without address", []string{"localhost"}, "", ""},
		{"host names are not resolved", []string{"db.example.com", "%.example.com"}, "10.0.0.1", ""},
		{"empty host matches nothing", []string{""}, "", ""},
		{"empty host matches no address", []string{""}, "10.0.0.1", ""},
		{"pattern without address", []string{"10.%"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var users []User
			for _, h := range tt.hosts {
				users = append(users, User{Name: "app", Host: h, HasPassword: true})
			}
			users = append(users, User{Name: "other", Host: "%", HasPassword: true})
			var from netip.Addr
			if tt.from != "" {
				from = netip.MustParseAddr(tt.from)
			}
			u, ok := NewUsers(users...).Lookup("app", from)
			got := ""
			if ok {
				got = u.Host
			}
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("Lookup(app, %s) = %q, %v; want %q", tt.from, got, ok, tt.want)
			}
		})
	}
}

func TestLookupName(t *testing.T) {
	users := NewUsers(
		User{Name: "app", Host: "%", MaxConnections: 1},
		User{Name: "App", Host: "%", MaxConnections: 2},
	)
	from := netip.MustParseAddr("10.0.0.1")
	tests := []struct {
		name   string
		want   int // MaxConnections of the account found; -1 for none
		lookup *Users
	}{
		{"app", 1, users},
		{"App", 2, users},
		{"APP", -1, users},
		{"", -1, users},
		{"app", -1, NewUsers()},
		{"app", -1, nil},
	}
	for _, tt := range tests {
		u, ok := tt.lookup.Lookup(tt.name, from)
		got := -1
		if ok {
			got = u.MaxConnections
		}
		if got != tt.want {
			t.Errorf("Lookup(%q) found MaxConnections %d, want %d", tt.name, got, tt.want)
		}
	}
	if n := users.Len(); n != 2 {
		t.Errorf("Len = %d, want 2", n)
	}
}

func TestLikeMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"%", "", true},
		{"%", "abc", true},
		{"", "", false}, // compileHost's empty pattern matches nothing
		{"a%c", "abc", true},
		{"a%c", "ac", true},
		{"a%c", "abcd", false},
		{"%b%", "abc", true},
		{"a_c", "abc", true},
		{"a_c", "ac", false},
		{"%%%", "x", true},
		{"a%b%c", "aXbYbZc", true},
		{"a%b%c", "aXcYb", false},
		{"%.5", "10.0.0.5", true},
		{"%.5", "10.0.0.55", false},
	}
	for _, tt := range tests {
		p := compileHost(tt.pattern)
		if got := len(p.like) > 0 && likeMatch(p.like, tt.s); got != tt.want {
			t.Errorf("%q LIKE %q = %v, want %v", tt.s, tt.pattern, got, tt.want)
		}
	}
}
