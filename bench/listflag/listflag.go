// Package listflag has the flag values the bench programs take more than once, as in
// --dsn A --dsn B.
package listflag

import (
	"fmt"
	"strings"
)

// Strings is a flag that may be given more than once; each value is kept in order.
type Strings []string

func (l *Strings) String() string     { return strings.Join(*l, " ") }
func (l *Strings) Set(s string) error { *l = append(*l, s); return nil }

// Ints is a whole-number flag that may be given more than once.
type Ints []int

func (l *Ints) String() string { return fmt.Sprint([]int(*l)) }
func (l *Ints) Set(s string) error {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	*l = append(*l, n)
	return nil
}
